import type { StoreUnavailableError } from "../errors";
import type { Lane } from "../sendQueue/sendQueue";
import type { StoreAccess } from "../store/storeAccess";
import type { ThroughputOutcome, ThroughputRefund, ThroughputRequest } from "../store/admissionStore";
import type { GcraLimit } from "./gcra";
import { ceilingKey, type CeilingScope } from "./throughputKeys";

/**
 * A cap-config's throughput ceilings (SPEC §8): every reservation waits in the
 * send queue with the other store calls, and a burst's reservations go to the
 * store together (one lua/gcra.lua call per batch, per cluster slot).
 */
export class ThroughputLimiter {
  private readonly lane: Lane<ThroughputRequest, ThroughputOutcome>;
  private readonly refunds: Lane<ThroughputRefund, number>;

  constructor(private readonly access: StoreAccess, private readonly keyPrefix: string) {
    this.lane = access.lane("throughput", (store, items, early) => store.throughput(items, early));
    // finishing work already begun (msgs were dropped): never refused as overloaded
    this.refunds = access.lane("throughput-refund", (store, items, early) => store.throughputRefund(items, early), { bounded: false });
  }

  /**
   * Gives back the instants dropped msgs had reserved (msg.reset), so the msgs
   * after them need not wait for nothing: the latest and those T apart before
   * it, and only if nothing was reserved after it (see gcraRefund).
   */
  refund(org: string, scope: CeilingScope, limit: GcraLimit, given: { count: number; lastUs: number }): Promise<number> {
    return this.access.submit(this.refunds, { key: ceilingKey(this.keyPrefix, org, scope), emissionUs: limit.emissionUs, toleranceUs: limit.toleranceUs, ...given });
  }

  /**
   * Reserves the earliest instant this msg conforms to the ceiling, if it is at
   * most `maxWaitMs` away (0: only now). A store failure is answered as the
   * fail mode says (returned when open, thrown when closed).
   */
  reserve(org: string, channel: string, scope: CeilingScope, limit: GcraLimit, maxWaitMs: number): Promise<ThroughputOutcome | StoreUnavailableError> {
    return this.access.decide(org, channel, this.lane, {
      key: ceilingKey(this.keyPrefix, org, scope),
      emissionUs: limit.emissionUs,
      toleranceUs: limit.toleranceUs,
      maxWaitUs: Math.max(0, Math.floor(maxWaitMs * 1000)),
    });
  }
}
