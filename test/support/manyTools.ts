/** The generated 300-tool catalogue (test/fixtures/mcp/manyToolsCatalog.mjs) as in-process managed tools. */
import type { ManagedTool } from '../../src/core/gateway/toolSet';
import { manyTools } from '../fixtures/mcp/manyToolsCatalog.mjs';

/** A result that matches the tool's output schema (as the stdio server answers). */
function resultFor(outputSchema: Record<string, any>, name: string, args: Record<string, unknown>): unknown {
  const props = outputSchema.properties;
  if (props.items) return { items: [], next_cursor: null };
  if (props.deleted) return { deleted: true };
  if (props.ok) return { ok: true, message: `${name} done` };
  const id = outputSchema.required[0];
  return { [id]: args[id] ?? (props[id].type === 'integer' ? 1 : 'new-1') };
}

export function manyManagedTools(count = 300, calls: string[] = []): ManagedTool[] {
  return manyTools(count).map((t) => ({
    name: t.name,
    description: t.description,
    inputSchema: t.inputSchema,
    outputSchema: t.outputSchema,
    approval: 'auto',
    expose: 'code',
    source: 'test',
    invoke: async (args) => {
      calls.push(`${t.name}:${JSON.stringify(args)}`);
      return resultFor(t.outputSchema, t.name, args);
    },
  }));
}

/** Queries a person would type, and the tool that must come first. */
export const SEARCH_CASES: [string, string][] = [
  ['post a message in a slack channel', 'slack_post_message'],
  ['restart a crashed kubernetes pod', 'k8s_restart_pod'],
  ['roll back a deployment to the previous revision', 'k8s_rollback_deployment'],
  ['refund a paid stripe invoice', 'stripe_refund_invoice'],
  ['merge a pull request', 'github_merge_pull_request'],
  ['find a free time slot for a meeting with Ana and Bo', 'calendar_find_free_slots'],
  ['tail the logs of a pod', 'k8s_get_pod_logs'],
  ['scale deployment to 5 replicas', 'k8s_scale_deployment'],
  ['send an email', 'gmail_send_email'],
  ['why is my SQL query slow? show the query plan', 'postgres_explain_query'],
  ['acknowledge the alert', 'pagerduty_acknowledge_alert'],
  ['stop an EC2 instance', 'aws_stop_ec2_instance'],
  ['where is the shipment of order 1042', 'shop_track_order_shipment'],
  ['adjust the stock level after counting', 'inventory_adjust_stock'],
  ['createIssue', 'github_create_issue'],
  ['text message a phone number', 'twilio_send_sms'],
  ['directions from the office to the airport', 'maps_directions'],
  ['how many vacation days are left', 'hr_time_off_balance'],
  ['rerun failed CI jobs', 'ci_rerun_failed_jobs'],
  ['export a figma frame as png', 'figma_export_frame_png'],
];
