import { StoreUnavailableError } from "../errors";
import type { Send } from "../send";
import type { Lane } from "../sendQueue/sendQueue";
import type { RecordRequest } from "../store/admissionStore";
import type { StoreAccess } from "../store/storeAccess";
import type { CapRule } from "../rules/rules";
import { isTotal, totalCounter } from "./capKinds";
import type { ApplicableCap } from "./decisions";
import type { TotalLeases } from "./totals/totalLeases";

export interface RecordOptions {
  access: StoreAccess;
  totals: TotalLeases;
  isExempt(tier: string | undefined): boolean;
  rulesOf(send: Send): readonly CapRule[] | StoreUnavailableError | Promise<readonly CapRule[] | StoreUnavailableError>;
  capsFor(send: Send, rules: readonly CapRule[]): ApplicableCap[];
}

/** record mode (SPEC §5): a send counted after the provider confirmed it, or an impression event, without checking. */
export class CapRecorder {
  private readonly records: Lane<RecordRequest, number[]>;

  constructor(private readonly options: RecordOptions) {
    this.records = options.access.lane("record", (store, items, early) => store.record(items, early));
  }

  /** record mode: count the send in every applicable cap without checking (idempotent). */
  async record(send: Send): Promise<{ caps: ApplicableCap[]; counts: number[] } | StoreUnavailableError | "exempt"> {
    if (this.options.isExempt(send.tier)) return "exempt";
    // rules at hand are used in this turn: no await per msg
    const got = this.options.rulesOf(send);
    const rules = got instanceof Promise ? await got : got;
    if (rules instanceof StoreUnavailableError) return rules;
    const all = this.options.capsFor(send, rules);
    const own = all.some(isTotal) ? all.filter((c) => !isTotal(c)) : all;
    // the caps are their own counter specs: a record reads no max and no shadow flag
    const request = own.length === 0 ? undefined : { key: own[0].key, member: send.messageId, counters: own };
    if (own === all) {
      // no total cap (most records): the one store call, nothing to gather
      if (!request) return { caps: own, counts: [] };
      const counts = await this.options.access.decide(send.org, send.channel, this.records, request);
      return counts instanceof StoreUnavailableError ? counts : { caps: own, counts };
    }
    // a total cap counts the send once more each time it is recorded: it keeps no ids (its memory is bounded)
    const recorded = Promise.all(all.filter(isTotal).map((cap) => this.options.totals.record(totalCounter(cap))));
    const [counts, spends] = await Promise.all([
      request ? this.options.access.decide(send.org, send.channel, this.records, request) : Promise.resolve<number[]>([]),
      recorded,
    ]);
    if (counts instanceof StoreUnavailableError) return counts;
    const failed = spends.find((s): s is StoreUnavailableError => s instanceof StoreUnavailableError);
    if (failed) return this.options.access.failed(send.org, send.channel, failed);
    return { caps: own, counts };
  }
}
