/** Typed builders for transcript events and host state, shared by the webview tests. */
import type { CodeInterpreterCallItem, DisplayOutput } from '../../../src/common/events';
import type { HostState } from '../../../src/common/protocol';
import type { TranscriptEvent } from '../../../src/common/transcript';

export const ev = {
  turn: (turn_id: string, prompt: string, extra: Partial<Extract<TranscriptEvent, { type: 'codeact.turn.started' }>> = {}): TranscriptEvent => ({
    type: 'codeact.turn.started',
    turn_id,
    prompt,
    ...extra,
  }),
  turnEnd: (turn_id: string, status: 'completed' | 'stopped' | 'failed' = 'completed', duration_ms?: number): TranscriptEvent => ({
    type: 'codeact.turn.ended',
    turn_id,
    status,
    ...(duration_ms !== undefined ? { duration_ms } : {}),
  }),
  text: (item_id: string, delta: string): TranscriptEvent => ({ type: 'response.output_text.delta', item_id, delta }),
  textDone: (item_id: string, text: string): TranscriptEvent => ({ type: 'response.output_text.done', item_id, text }),
  codeStart: (item_id: string, runtime?: CodeInterpreterCallItem['runtime']): TranscriptEvent => ({
    type: 'response.code_interpreter_call.in_progress',
    item_id,
    ...(runtime ? { runtime } : {}),
  }),
  code: (item_id: string, delta: string): TranscriptEvent => ({ type: 'response.code_interpreter_call_code.delta', item_id, delta }),
  codeDone: (item_id: string, code: string): TranscriptEvent => ({ type: 'response.code_interpreter_call_code.done', item_id, code }),
  interpreting: (item_id: string): TranscriptEvent => ({ type: 'response.code_interpreter_call.interpreting', item_id }),
  completed: (item_id: string): TranscriptEvent => ({ type: 'response.code_interpreter_call.completed', item_id }),
  out: (item_id: string, delta: string, stream: 'stdout' | 'stderr' = 'stdout'): TranscriptEvent => ({ type: 'codeact.output.delta', item_id, stream, delta }),
  /** A live display (`update`: it replaces the display with the same display_id). */
  display: (item_id: string, output: Omit<DisplayOutput, 'type'>, update?: boolean): TranscriptEvent => ({
    type: 'codeact.output.display',
    item_id,
    output: { type: 'display', ...output },
    ...(update ? { update: true } : {}),
  }),
  toolStart: (item_id: string, call_id: string, name: string, args: unknown): TranscriptEvent => ({
    type: 'codeact.tool_call.started',
    item_id,
    call_id,
    name,
    arguments: args,
  }),
  toolDone: (item_id: string, call_id: string, name: string, result: { output?: unknown; error?: string }, duration_ms: number): TranscriptEvent => ({
    type: 'codeact.tool_call.completed',
    item_id,
    call_id,
    name,
    duration_ms,
    ...result,
  }),
  itemDone: (item: Partial<CodeInterpreterCallItem> & { id: string }): TranscriptEvent => ({
    type: 'response.output_item.done',
    item: { type: 'code_interpreter_call', status: 'completed', code: '', runtime: 'local', outputs: [], ...item },
  }),
  approval: (
    approval_id: string,
    kind: 'tool' | 'code',
    extra: { item_id?: string; name?: string; arguments?: unknown; code?: string } = {},
  ): TranscriptEvent => ({
    type: 'codeact.approval.requested',
    approval_id,
    kind,
    ...extra,
  }),
  approved: (approval_id: string, decision: 'allow_once' | 'allow_session' | 'allow_always' | 'deny'): TranscriptEvent => ({
    type: 'codeact.approval.resolved',
    approval_id,
    decision,
  }),
  done: (id: string, input_tokens: number, output_tokens: number): TranscriptEvent => ({
    type: 'response.completed',
    response: { id, usage: { input_tokens, output_tokens } },
  }),
  error: (message: string, code?: string): TranscriptEvent => ({ type: 'error', message, ...(code ? { code } : {}) }),
};

export function hostState(overrides: Partial<HostState> = {}): HostState {
  return {
    providers: [
      {
        id: 'openai',
        label: 'OpenAI',
        hasKey: true,
        models: [
          { id: 'gpt-5-mini', label: 'GPT-5 mini' },
          { id: 'gpt-5', label: 'GPT-5' },
        ],
      },
      { id: 'anthropic', label: 'Anthropic', hasKey: false, models: [{ id: 'claude-sonnet-4-5', label: 'Claude Sonnet 4.5' }] },
      { id: 'gemini', label: 'Google Gemini', hasKey: false, models: [{ id: 'gemini-2.5-flash', label: 'Gemini 2.5 Flash' }] },
    ],
    provider: 'openai',
    model: 'gpt-5-mini',
    runtime: 'local',
    mode: 'toolCode',
    tools: [
      { name: 'list_orders', description: 'Orders of a customer', approval: 'auto', source: 'command' },
      { name: 'get_order', description: 'One order', approval: 'auto', source: 'http' },
      { name: 'refund_order', description: 'Refund an order', approval: 'ask', source: 'command' },
    ],
    trusted: true,
    conversationId: 'conv-1',
    conversationTitle: 'Late orders for ACME',
    version: '0.1.0',
    ...overrides,
  };
}

/** A small bar chart (PNG, made with matplotlib) as a data URL, as a runtime would send it. */
export const CHART_PNG =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAVAAAACwCAYAAABZ2zbvAAAAOXRFWHRTb2Z0d2FyZQBNYXRwbG90bGliIHZlcnNpb24zLjYuMywgaHR0cHM6Ly9tYXRwbG90bGliLm9yZy/P9b71AAAACXBIWXMAAAxOAAAMTgF/d4wjAAAV1UlEQVR4nO3de1BU5/0G8GeXa+oSjQgGWREElARhFyFeKgpTqRgr1aiYaQYNF92a2DQVCUyGeEvRZGrcSbSXhBFtkNa7YkpGpjFFE402NAoTkyp3ZWWIUdSypdzf3x/5ZUcCKvuy7EWez8zOuOf6ffeVZ95zzp6zCiGEABERmU1p6wKIiBwVA5SISBIDlIhIEgOUiEgSA5SISBIDlIhIEgOUiEgSA5SISBIDlIhIEgOUiEgSA5SISBIDlAAA7e3tyMrKQlBQEJ544glMmjQJu3fvtnVZ/ZacnIzf//73Vt3nrl27oFAocPr06R7TOzs78frrryMkJAShoaEICQmBTqfD7du3UVdXB4VCgYULF/ZYZ/369VAoFCgqKgIAbNy4Ed7e3tBqtabXm2++aa2mUT8527oAsg/Jycloa2tDeXk5hg0bhrq6Ojz99NPo6OiATqezdXk9dHZ2wtl54P91B7qdvLw8xMbGIi8vD9HR0abpaWlpaGpqwtmzZ/HYY4+hu7sbhw8fRlNTE5RKJUaOHImvv/4a33zzDUaPHo3u7m7s27cPYWFhPba/fPlyvPXWW9L10eDjCJRQVVWFwsJC5ObmYtiwYQAAf39/bNu2Db/97W8BACdPnoRGo0FKSgoiIyMRFRWF8vJy0zb27NmDqVOnYvLkyYiJicHFixcBAH/+858RHx+PX/ziFwgLC0NUVBRqamruWUdcXBzCw8Oh1WpRWFhomqdQKLBt2zbExsbi1VdfxbVr1zB79myEh4djwYIFuHHjhmnZ5uZmrFy5ElOmTEF4eDhWrVqFjo4OAEBsbCyys7Mxe/ZsxMfH49tvv8WcOXMQFhaG8PBwpKSk9Oszu3TpEmpra1FQUICjR4+iubnZ1IaDBw9i9+7deOyxxwAASqUSiYmJGD9+vKktSUlJyM/PBwCcOHECERERGDlyZL/2TXZE0JC3f/9+ER4e3mt6U1OTACCuX78uSkpKBABRUlJiWufJJ58UQghx+vRpMW/ePNHa2iqEEOKTTz4xbW/37t1i+PDhoq6uTgghRFZWltDpdH3WMWXKFPHee+8JIYSoqKgQI0eOFFevXhVCCAFAbN682bTsokWLxMaNG4UQQlRXVwuVSiV27NghhBBi5cqVIj8/XwghRHd3t0hLSxN6vV4IIURMTIyYN2+eaG9vF0IIodfrxcqVK03bvXnzZr8+s4yMDJGZmSmEEGLhwoUiNzf3vp/l92pra4Wnp6e4cuWKCA0NFUII8eyzz4ri4mIRExMj/va3vwkhhNiwYYPw8vISGo3G9Dp48GC/aiPr4QiUAHw3KnqQoKAgxMbGAgCWLl2Ka9euoaGhAceOHUN5eTmmTp0KrVaLl156Cd9++y3a29sBANHR0Rg3bhwAYPr06aiuru617ebmZpSVlSEtLQ0AEBwcjOjo6B7nF1NTU03/LikpwYoVKwAA48ePx+zZs03zCgsLsXXrVmi1WkRERODTTz9FZWWlaf6yZcvg4uICAJg2bRqKi4uxdu1afPDBB6YR+P10dHRgz549pnrS0tKQl5f3wPXu5ufnhzFjxqCoqAhffPEFfvrTn/ZaZvny5SgrKzO9lixZYtY+aPDxHCghIiICFRUVuHnzJjw9PU3Tz549C7VaDS8vr3uuq1AoIIRAamoqXn/99T6XcXd3N/3byckJnZ2dvZYR//9c7x8G+d3vVSpVv9ojhEBhYaHpkPmH7t7O9OnTUVZWhhMnTuDw4cN47bXXcOHCBTg5Od1z+0VFRbh9+zbi4+NN+2toaMDFixcxefJkVFZW9vos+5KamoqUlBSsWrUKSiXHMo6IvUYIDg5GQkICdDodWlpaAAB1dXVYu3YtsrOzTctVVVXhk08+AQAcOnQIvr6+8PHxQUJCAvLz81FfXw8A6O7uxr/+9S+zanj00Ueh1Wrx/vvvAwCqq6tx5swZzJgxo8/lf/KTn2DXrl2mWj/++GPTvJ///Od48803TUF969YtVFVV9bmd2tpaqFQqLF26FDt27EBFRQWMRiOuXbuGkJCQPtfJy8vD22+/jbq6OtTV1eHKlSt4+eWXsWvXLgQFBWHx4sVIS0vD7du3AXwXsPn5+b1G3s888wwyMjKwatWq/n9QZFcYoAQAyM/Px/jx4xEWFoYnnngC8+fPx9q1a3v8cWu1Wuzbtw9RUVF444038Ne//hUAMGvWLGzZsgULFiyARqPBpEmTsH//frNr+Mtf/oKCggJoNBosXrwYO3fuxNixY/tc9p133sHJkycRHh6OjIwMxMXFmea9/fbbcHZ2hlarRXh4OOLi4lBXV9fndk6ePInIyEhotVrMmDEDW7duxfDhw9HQ0NDnFfqGhgb84x//QGJiYo/py5Ytw549e9De3o5du3ZBo9Fg6tSpCA0NRWhoKD777LNeI1I3NzdkZWXB19e3z9ry8/N7fI3plVdeud/HRzagEIK/iUQPdvLkSWRkZJg9snRUer0e3t7eSEpKsnUpZMd4DpSoD+np6bYugRwAR6BERJJ4DpSISBIDlIhIEgOUiEgSA5SISJJDBOi9vtBMRGRLNgvQTZs2QaFQmJ7acz9Go9EKFRERmccmAXr+/HmcO3cOfn5+ttg9EZFFWD1A29rasHr1avzxj3/s1xOAiIjsldUDdP369UhKSkJAQIC1d01EZFFWvZXz7NmzKC0tfeBvu+j1euj1etN7mXOgDUvmm72OIxlzqMjWJRANeVYdgZ46dQqXLl1CQEAA/P39YTAYEB8fj+PHj/dYLj09HQaDwfTq73MgiYisyab3wvv7+6OoqAiTJk2673JqtRoGg8GsbXMESkSDzSG+B0pEZI9s+ji7ez3klojIEXAESkQkiQFKRCSJAUpEJIkBSkQkiQFKRCSJAUpEJIkBSkQkiQFKRCSJAUpEJIkBSkQkiQFKRCSJAUpEJIkBSkQkiQFKRCSJAUpEJIkBSkQkiQFKRCSJAUpEJIkBSkQkiQFKRCTJ6j8qN2fOHDQ2NkKpVMLDwwM7duyAVqu1dhlERANm9QA9cOAARowYAQAoLCxEamoqzp8/b+0yiIgGzOqH8N+HJwDcuXMHSiXPIhCRY7LJ78IvX74cJSUlAIDi4mJblEBENGA2Gf7l5+ejvr4eOTk5eOWVV3rN1+v1UKvVppfRaLRBlURE96cQQgiZFbu6ulBfXw9/f/8BFfDII4/AYDDA09Pznsuo1WoYDAazttuwZP6A6rJ3Yw4V2boEoiFPagT66aefYty4cZg1axYAoLS0FMuWLXvgev/5z3/Q0NBgen/06FF4enpi5MiRMmUQEdmU1DnQzMxMnDp1CkuWLAEAPPXUU/26kn7nzh0sXrwY//vf/6BUKuHl5YWioiIoFAqZMoiIbEoqQDs7OxEYGNhjmqur6wPXGzt2LD7//HOZXRIR2R2pQ3h3d3cYjUbTyPGrr76Cu7u7RQsjIrJ3UiPQdevWIT4+Hg0NDUhOTkZxcTEKCgosXRsRkV2TCtA5c+YgODgYxcXFEELgtddeQ1BQkKVrIyKya1KH8Dk5OQgICMALL7yAF198EUFBQcjJybF0bUREdk0qQI8cOdKvaUREDzOzDuE/+ugj/P3vf0dDQwMyMzNN0+/cuWPxwoiI7J1ZI1BXV1eoVCooFAoMGzbM9AoJCeEIlIiGHLNGoDExMYiJicHChQuh0WgGqyYiIocgdRVeo9HgyJEjKCsrQ2trq2n67373O4sVRkRk76QuIv3mN7/B7t27sXPnTnR1dWHfvn24efOmpWsjIrJrUgH68ccf49ixY/Dy8sK2bdtQWlqK69evW7o2IiK7Jn0rp1KphEKhQEdHB0aPHo1r165ZujYiIrsmdQ7Uw8MDLS0tiI6OxvPPP4/HH38cLi4ulq6NiMiuSY1A9+7dCycnJ2zduhWhoaFQKpU4ePCgpWsjIrJrUiPQ0aNHm/6dnZ1tsWKIiByJWQGamJh434cfHzhwYMAFERE5CrMCdP78h/t3hoiIzGFWgD7//PODVQcRkcOxyc8aExE9DKwaoK2trVi4cCEmTJgArVaLuXPnoq6uzpolEBFZjNVHoDqdDpcvX0ZZWRnmz58PnU5n7RKIiCxCKkBLS0vR0tIC4Lsr7xkZGT1+7/1e3N3dMW/ePNOV/GnTpqGmpkamBCIim5MK0BUrVsDNzQ2VlZXIzs6Gi4sLUlJSzN7O9u3bkZCQIFMCEZHNSQWok5MTnJyccPz4cbzwwgt44403zH6YyJYtW1BZWYnNmzf3mqfX66FWq00vo9EoUyYR0aCSCtC2tjY0NjaiqKgIsbGxAICurq5+r//WW2/hyJEjOH78OH70ox/1mp+eng6DwWB6qVQqmTKJiAaVVICuWbMGISEh8PDwwOTJk1FdXY0RI0b0a129Xo+9e/fio48+6vc6RET2SCGEEAPdSFdXF7q6uuDq6nrf5QwGA8aOHYvx48fDw8MDAODm5oZ//vOf911PrVbDYDCYVVPDkof7rqkxh4psXQLRkCf1MJHp06fjpZdeQmJiIlxcXEznRB9ErVbDAnlNRGQXpA7hN27ciH379sHf3x/r1q3jw5SJaEiSCtD4+Hh88MEHOHPmDNra2hAZGYnExEScOXPG0vUREdmtAd2J1NzcjDt37sDV1RU+Pj5YvXo1fvWrX1mqNiIiuyYVoPv378fMmTPx3HPPISoqCpcvX8b27dvxxRdfoKiIFzeIaGiQuoi0Z88ebNiwAXFxcT2mOzk5YceOHRYpjIjI3kkF6P1Gmbw1k4iGCqkAvXHjBjZt2oTy8nK0traapn/++ecWK4yIyN5JnQNNTU2FWq1GY2Mj1q1bB29vb8THx1u6NiIiuyYVoFevXkVWVhbc3d2RkJCAI0eO4LPPPrN0bUREdk0qQL+/ZdPNzQ1NTU1wdnY2+1ZLIiJHJ3UOdOLEiWhqakJSUhKmTZuG4cOHIyIiwtK1ERHZtQE/TOTMmTO4desWnn766X7dDy+DDxPpjQ8TIbI9s0ag3/+Mx92+H3m2tbX1+WxPIqKHlVkBqlKpTL9n1BdzHqpMROTozArQ7u5uAEBOTg7c3Nyg0+kghMDOnTvh7Cx1OpWIyGFJnQOdMWNGrycvRUdH4/Tp0xYr7G48B9obz4ES2Z7U15iamppQVVVlel9VVYUbN25YrCgiIkcgddy9efNmTJs2DZGRkQCACxcuIDc316KFERHZO6kAXbRoEWbOnIlz585BCIHp06fDy8vL0rUREdk16Ss/Xl5efPISEQ1pA3oivYxf//rX8Pf3h0KhwMWLF629eyIii7F6gC5ZsgSnT5/GuHHjrL1rIiKLsvqXN2fNmmXtXRIRDQqrj0CJiB4Wdnn7kF6vh16vN703Go02rIbo4VV5MNbWJQya4MSTg74PuxyBpqenw2AwmF4qlcrWJRER9WKXAUpE5AisHqCrV6823dseFxeHoKAga5dARGQRVg/QP/zhDzAYDOjs7ERjY2OPe+qJiBwJD+GJiCQxQImIJDFAiYgkMUCJiCQxQImIJDFAiYgkMUCJiCQxQImIJDFAiYgkMUCJiCQxQImIJDFAiYgkMUCJiCQxQImIJDFAiYgkMUCJiCQxQImIJDFAiYgkMUCJiCRZPUArKyvx4x//GBMmTMCUKVPw9ddfW7sEIiKLsHqA/vKXv4ROp0NFRQUyMzORlpZm7RKIiCzCqgF6/fp1nD9/HklJSQCAxYsXo7a2FnV1ddYsg4jIIqwaoPX19RgzZgycnZ0BAAqFAn5+frh69ao1yyAisghna+9QoVD0eC+E6LWMXq+HXq83vW9sbIRarR702gbCaDRCpVJZb4d2/nnYA6v3Cd2X1ftjjfl/IyqVCpcuXer38grRV4INkuvXryM4OBg3b96Es7MzhBDw8fHBuXPn4O/vb60yBoVarYbBYLB1GXQX9ol9eRj7w6qH8N7e3oiIiEBBQQEA4PDhw/D393f48CSiocnqh/DvvfcekpOTsWXLFjz66KN4//33rV0CEZFFWD1AJ06ciLNnz1p7t4MuPT3d1iXQD7BP7MvD2B9WPQdKRPQw4a2cRESSGKBERJKGfIA2NzdDpVJhxYoV91zmww8/RFRUFNzc3JCRkdFrfk5ODgIDAxEYGIh169b1mJeXl4fg4GAEBgZCp9Ohs7MTwHffiYuPj8eoUaMwatQoyzbKwdmqT7788kvMmjULISEhCAsLg06nQ1tbm2Ub56Bs1Se1tbWIjIyEVqtFWFgYEhMTcevWLcs2biDEEJebmytmzpwpRowYIZqbm/tc5vLly6KsrExkZ2eLtWvX9ph36tQp8eSTTwqj0ShaW1tFZGSkKC4uFkIIUVNTI3x8fERjY6Po7u4WCQkJ4t133xVCCNHa2ipOnDghLly4IDw9PQe3kQ7GVn1SUVEhysvLhRBCdHZ2iqVLl4rNmzcPYksdhy3/TlpaWkzbefnll8WaNWsGqZXmG/Ij0Ly8PGRlZWHmzJk4cOBAn8tMmDABGo3GdAvq3fbv34/k5GQMGzYMbm5uSE1Nxd69ewEAhw4dwjPPPIPRo0dDoVBg1apVpnlubm6YPXs2RowYMWhtc1S26pPg4GCEh4cDAJycnPDUU0+hpqZmkFrpWGz5d/LII48AALq6umA0GqFU2k9s2U8lNvDVV1+hvr4ec+fORVpaGvLy8szextWrVzFu3DjTe39/f9O9/febR32zlz7573//i507dyIhIUGiFQ8XW/dJe3s7tFotRo0ahaqqKqxfv34ArbGsIR2geXl5WL58OZycnPCzn/0MNTU1+Pe//232du6+v1/84Fth95tHvdlDn3R0dODZZ5/FnDlzsGDBArP3/bCxdZ+4urqirKwM33zzDSZOnIh3333X7H0PFqt/kd5edHR0oKCgAC4uLqbDhZaWFuj1epSWlgIAAgICcPTo0ftux8/Pr8fj+K5cuQI/P78HzqPe7KFPOjo6sHTpUvj4+OCdd96xUMsclz30yfdcXV2RkpKClStXIjMzc4AtsxBbnoC1pYMHD4qpU6f2mPbll18Kb29v0d7e3uc6GzZs6HVyvKSkRISGhvY4OX78+HEhhBDV1dW9To7/6U9/6rF+bW0tLyL9P1v3SUdHh1i0aJFITU0V3d3dg9BCx2PrPrly5YowGo1CCCG6urrEmjVrxHPPPWfpZkobsgE6d+5csX379l7TtVqtOHz4cI9pJSUlwtfXV3h4eAiVSiV8fX3FsWPHTPM3bdokAgICREBAgHj11Vd7rJubmysCAwNFQECASEtL6/GfLiIiQjz++ONCqVQKX19fkZSUZOFWOhZb90lBQYEAIMLDw4VGoxEajUa8+OKLg9BSx2HrPvnwww9FWFiYCAsLE6GhoWLZsmXixo0bg9BSObyVk4hI0pC+iERENBAMUCIiSQxQIiJJDFAiIkkMUCIiSQxQIiJJDFAiIkkMUCIiSQxQIiJJDFAiIkkMUCIiSQxQIiJJDFAiIkn/B5xvseh3Z4ECAAAAAElFTkSuQmCC';

export const DEMO_CODE = `import matplotlib.pyplot as plt

# Look up the customer's open orders and check which are late.
orders = await call_tool("list_orders", customer="ACME", status="open")
print(f"\\x1b[1mFound {len(orders)} open orders\\x1b[0m")

late = []
for order in orders:
    detail = await call_tool("get_order", order_id=order["id"])
    if detail["days_late"] > 0:
        late.append({"id": order["id"], "days_late": detail["days_late"], "total": detail["total"]})
        print(f"\\x1b[33mlate\\x1b[0m  {order['id']}  +{detail['days_late']}d")

plt.bar([o["id"] for o in late], [o["days_late"] for o in late])
plt.show()
{"late": late, "checked": len(orders)}
`;

export const DEMO_ANSWER = `Two of ACME's **3 open orders** are late:

| Order | Days late | Total |
|:------|----------:|------:|
| A-1001 | 4 | $1,240.00 |
| A-1003 | 1 | $89.90 |

The oldest one, \`A-1001\`, is **4 days** overdue. To refund it:

\`\`\`python
await call_tool("refund_order", order_id="A-1001", reason="late")
\`\`\`

See [the order desk runbook](https://example.com/runbook) for escalation rules.
`;

/** The events of one realistic turn: prompt, text, streamed code, tool calls, output, approval, result, answer. */
export function demoTurn(turnId = 'turn-1', execId = 'ci_1'): TranscriptEvent[] {
  const events: TranscriptEvent[] = [
    ev.turn(turnId, 'Which of ACME’s open orders are late?', { provider: 'openai', model: 'gpt-5-mini', runtime: 'local' }),
    ev.text('msg_0', 'Let me check the open orders '),
    ev.text('msg_0', 'with the order tools.'),
    ev.textDone('msg_0', 'Let me check the open orders with the order tools.'),
    ev.codeStart(execId, 'local'),
  ];
  for (let i = 0; i < DEMO_CODE.length; i += 17) events.push(ev.code(execId, DEMO_CODE.slice(i, i + 17)));
  events.push(
    ev.codeDone(execId, DEMO_CODE),
    ev.interpreting(execId),
    ev.toolStart(execId, 'call_1', 'list_orders', { customer: 'ACME', status: 'open' }),
    ev.toolDone(execId, 'call_1', 'list_orders', { output: [{ id: 'A-1001' }, { id: 'A-1002' }, { id: 'A-1003' }] }, 182),
    ev.out(execId, '\x1b[1mFound 3 open orders\x1b[0m\n'),
    ev.toolStart(execId, 'call_2', 'get_order', { order_id: 'A-1001' }),
    ev.toolDone(execId, 'call_2', 'get_order', { output: { id: 'A-1001', days_late: 4, total: 1240 } }, 95),
    ev.out(execId, '\x1b[33mlate\x1b[0m  A-1001  +4d\n'),
    ev.toolStart(execId, 'call_3', 'get_order', { order_id: 'A-1002' }),
    ev.toolDone(execId, 'call_3', 'get_order', { error: 'HTTP 503 from orders.internal: service unavailable' }, 1203),
    ev.out(execId, 'warning: A-1002 unavailable, retried\n', 'stderr'),
    ev.toolStart(execId, 'call_4', 'get_order', { order_id: 'A-1003' }),
    ev.toolDone(execId, 'call_4', 'get_order', { output: { id: 'A-1003', days_late: 1, total: 89.9 } }, 88),
    ev.out(execId, '\x1b[33mlate\x1b[0m  A-1003  +1d\n'),
    ev.completed(execId),
    ev.itemDone({
      id: execId,
      code: DEMO_CODE,
      runtime: 'local',
      sandbox: { kind: 'bubblewrap', network: false },
      outputs: [
        { type: 'logs', logs: 'Found 3 open orders\n' },
        { type: 'image', url: CHART_PNG },
      ],
      value: {
        late: [
          { id: 'A-1001', days_late: 4, total: 1240 },
          { id: 'A-1003', days_late: 1, total: 89.9 },
        ],
        checked: 3,
      },
      duration_ms: 1830,
      exit_code: 0,
    }),
  );
  for (let i = 0; i < DEMO_ANSWER.length; i += 23) events.push(ev.text('msg_1', DEMO_ANSWER.slice(i, i + 23)));
  events.push(ev.textDone('msg_1', DEMO_ANSWER), ev.done('resp_1', 1234, 340), ev.turnEnd(turnId, 'completed', 6400));
  return events;
}
