/**
 * What the first-party adapters (OpenAI Responses, Anthropic, Gemini) share: their SDK's client, the base
 * URL (for messages), the stream's bounds, function tools and a hosted sandbox of their own, and the
 * catalogue's answer to which models see images.
 */
import { modelSeesImages } from './catalog';
import type { HostedRuntime } from '../../../common/providers';
import type { ErrorClassifier } from './errorReading';
import { runStream } from './runStream';
import type { StreamBounds } from './watchdog';
import type { EmitFn, Provider, ProviderCapabilities, TurnRequest, TurnResult } from './types';

export abstract class FirstPartyProvider<Client> implements Provider {
  /** A provider with a hosted sandbox of its own (the catalogue's `hostedSandbox`), whose runtime kind is its id. */
  abstract readonly id: HostedRuntime;

  constructor(
    readonly client: Client,
    /** Reads its SDK's errors (the registry's). */
    protected readonly errors: ErrorClassifier,
    protected readonly baseURL?: string,
    protected readonly bounds?: Partial<StreamBounds>,
  ) {}

  /** Hosted code runs in the provider's sandbox, whose items carry its id as their runtime. */
  get capabilities(): ProviderCapabilities {
    return { functionTools: true, hostedCode: true, hostedRuntime: this.id };
  }

  seesImages(model: string): boolean {
    return modelSeesImages(this.id, model);
  }

  abstract streamTurn(request: TurnRequest, emit: EmitFn): Promise<TurnResult>;

  /** One turn's stream through the shared skeleton (./runStream), as this provider, its items' ids prefixed. */
  protected stream<E>(
    idPrefix: string,
    req: TurnRequest,
    emit: EmitFn,
    open: (signal: AbortSignal) => Promise<AsyncIterable<E>>,
    machineFor: MachineFor<E>,
  ): Promise<TurnResult> {
    return runStream({ provider: this.id, errors: this.errors, baseURL: this.baseURL, idPrefix, bounds: this.bounds }, req, emit, open, machineFor);
  }
}

type MachineFor<E> = Parameters<typeof runStream<E>>[4];
