import { SettingError } from "../core/errors";
import type { Node, NodeAPI, NodeDef } from "node-red";
import { allowedAdmission, quietAdmission } from "../core/admission";
import type { CapService } from "../core/capService";
import { HeldOrder } from "../core/hold/heldOrder";
import { parseQuietWindow, quietUntil, type QuietWindow } from "../core/quietHours/quietWindow";
import { parseSend } from "../core/send";
import type { CapConfigNode } from "./gate/capConfigNode";
import { Gate, type Turn } from "./gate/gate";
import { httpResponseSetting } from "./gate/settings";
import { checkQuietTime, numberSetting, QUIET_TIME_FIELDS } from "../core/gateSettings";
import type { Translate } from "../core/schema/messages";
import { runtimeMessages } from "./gate/i18n";
import { holdOrExpire } from "./gate/holding";
import { prepareRefusal, type AdmittedMsg } from "./gate/refusal";
import { SEND_FIELDS, SendReader, type FieldProps } from "./gate/sendReader";

const GATE = "quiet-hours-gate";

export type QuietHoursGateDef = NodeDef & FieldProps & {
  config?: string;
  start?: string;
  end?: string;
  days?: unknown;
  timezone?: string;
  disposition?: string;
  jitter?: number | string;
  exemptCategories?: unknown;
  deferMax?: number | string;
  httpResponse?: boolean | string;
};


function listOf(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String).map((s) => s.trim()).filter((s) => s !== "");
  if (typeof value === "string") return value.split(",").map((s) => s.trim()).filter((s) => s !== "");
  return [];
}

interface QuietSettings {
  window: QuietWindow;
  disposition: "defer" | "skip";
  jitterMs: number;
  deferMaxMs: number;
  exemptCategories: string[];
}

/** The gate's own settings, checked at deploy; a bad one names its property. */
function settingsOf(def: QuietHoursGateDef, t: Translate): QuietSettings {
  for (const property of ["start", "end"] as const) checkQuietTime(property, def[property], t);
  const window = parseQuietWindow({
    start: def.start ?? QUIET_TIME_FIELDS.start,
    end: def.end ?? QUIET_TIME_FIELDS.end,
    days: def.days === undefined || def.days === "" ? [0, 1, 2, 3, 4, 5, 6] : def.days,
    timezone: def.timezone || "UTC",
  });
  const disposition = def.disposition || "defer";
  if (disposition !== "defer" && disposition !== "skip") throw new SettingError("disposition", `disposition: must be defer or skip, got ${JSON.stringify(disposition)}`);
  return {
    window, disposition,
    jitterMs: numberSetting(GATE, "jitter", def.jitter, t) * 1000,
    // a day by default, not SPEC's 6 h: the default window (21:00–08:00) lasts 11 h
    deferMaxMs: numberSetting(GATE, "deferMax", def.deferMax, t) * 1000,
    exemptCategories: listOf(def.exemptCategories),
  };
}

export default function register(RED: NodeAPI): void {
  function QuietHoursGate(this: Node, def: QuietHoursGateDef): void {
    RED.nodes.createNode(this, def);
    const node = this;
    const heldOrder = new HeldOrder();
    const httpResponse = httpResponseSetting(def.httpResponse);
    // this gate's `timezone` property is its default zone (SPEC §11), so the recipient's zone is always msg.timezone
    // attributes and recipientLimits mean nothing to quiet hours: not read, so a malformed one cannot stop a send here
    const reader = new SendReader(RED, node, def, SEND_FIELDS.filter((f) => !["timezone", "body", "attributes", "recipientLimits"].includes(f)));
    const gate = new Gate(RED, node, def.config, { type: GATE, needsConfig: "its queue holds deferred msgs", settings: () => settingsOf(def, runtimeMessages(RED)) });
    const { status } = gate;

    async function handle(msg: AdmittedMsg, turn: Turn, service: CapService, settings: QuietSettings): Promise<void> {
      const read = reader.read(msg);
      const sendData = parseSend({ ...(read instanceof Promise ? await read : read), timezone: (msg as { timezone?: unknown }).timezone }, service.sendRules);
      turn.lineUp(sendData);
      const now = new Date();
      const exempt = service.isExempt(sendData.tier) || (sendData.category !== undefined && settings.exemptCategories.includes(sendData.category));
      if (exempt) {
        msg.admission = allowedAdmission(msg.admission, { gate: GATE, now }, "exempt");
        status.allowed();
        turn.send([msg, null, null]);
        return;
      }
      const window = parseQuietWindow((msg as { quietHours?: unknown }).quietHours, {
        field: "msg.quietHours",
        defaults: { ...settings.window, ...(sendData.timezone ? { timezone: sendData.timezone } : {}) },
      });
      const until = quietUntil(window, now.getTime());
      if (until === null) {
        msg.admission = allowedAdmission(msg.admission, { gate: GATE, now });
        status.allowed();
        turn.send([msg, null, null]);
        return;
      }
      const refusal = quietAdmission(msg.admission, until, settings.disposition, { gate: GATE, channel: sendData.channel, now });
      const ctx = { RED, node, gate: GATE, service, status, httpResponse };
      if (settings.disposition === "defer") {
        await holdOrExpire({ ...ctx, configId: (gate.config as CapConfigNode).id, deferMaxMs: settings.deferMaxMs, jitterMs: settings.jitterMs, order: heldOrder }, msg, refusal, sendData,
          Number.isFinite(until) ? until : null, turn);
        return;
      }
      await prepareRefusal(ctx, msg, refusal, sendData);
      turn.send([null, msg, null]);
    }

    gate.serve(handle);
  }

  RED.nodes.registerType(GATE, QuietHoursGate);
}
