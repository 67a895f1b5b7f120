import { formatSeconds, refusal, usageRows, type SidebarTranslate } from "../model/words";
import { heldLines, historyLines, historyOff, type RecipientLine } from "../model/recipientRows";

/** The channels SPEC §2 names, offered as the channel input's suggestions. */
const CHANNELS = ["sms", "whatsapp", "email", "voice", "rcs", "viber", "line", "messenger", "instagram", "push", "telegram", "in_app"];

export interface Inspector {
  element: JQuery;
  /** the cap-configs to pick from, by the name the sidebar shows (id → name); the usable ones first */
  setConfigs(names: ReadonlyMap<string, string>, usable: (id: string) => boolean): void;
}

interface UsageBody {
  recipient?: string;
  channel?: string;
  org?: string;
}

/**
 * Pick a cap-config, type a recipient (org, channel) and every cap that
 * applies shows as a bar, then the msgs held for the recipient and its last
 * verdicts at every gate: it reads `GET frequency-cap/:config/usage`, `…/held`
 * and `…/history` with the editor's own login. Enter in any field inspects, as
 * the button does. `gateLabel` names a gate by its node id.
 */
export function createInspector(t: SidebarTranslate, gateLabel: (id: string) => string): Inspector {
  const element = $('<div class="sendgate-admission-inspector"></div>');
  const configSelect = $('<select class="sendgate-admission-config"></select>');
  const recipientInput = $('<input type="text" class="sendgate-admission-recipient">').attr("placeholder", t("placeholder.recipient"));
  const orgInput = $('<input type="text" class="sendgate-admission-org">').attr("placeholder", t("placeholder.org"));
  const channelInput = $('<input type="text" class="sendgate-admission-channel" value="sms" list="sendgate-admission-channels">').attr("placeholder", t("placeholder.channel"));
  const channels = $('<datalist id="sendgate-admission-channels"></datalist>');
  for (const c of CHANNELS) $("<option></option>").attr("value", c).appendTo(channels);
  const inspectButton = $('<button type="button" class="red-ui-button sendgate-admission-inspect"></button>').text(t("inspect"));
  const result = $('<div class="sendgate-admission-usage"></div>');
  const row = (label: string, ...inputs: JQuery[]): JQuery => $('<div class="sendgate-admission-row"></div>').append($("<label></label>").text(label), ...inputs);
  // three short rows, the button beside the recipient: the inspector sits below the lists and must stay small
  element.append(
    row(t("field.config"), configSelect),
    row(t("field.recipient"), recipientInput, inspectButton),
    row(t("field.channelOrg"), channelInput, channels, orgInput.attr("title", t("field.org"))),
    result,
  );

  function showUsage(body: UsageBody & { caps?: unknown[] }): void {
    result.empty();
    const rows = usageRows(body, t);
    $('<div class="sendgate-admission-usage-head"></div>')
      .text(t("usage.head", { recipient: String(body.recipient ?? ""), channel: String(body.channel ?? ""), org: String(body.org ?? "") }))
      .appendTo(result);
    if (rows.length === 0) $('<div class="sendgate-admission-empty"></div>').text(t("usage.none")).appendTo(result);
    for (const r of rows) {
      const cap = $('<div class="sendgate-admission-cap"></div>').attr("data-cap", r.id).toggleClass("sendgate-admission-cap-shadow", r.shadow).appendTo(result);
      $('<div class="sendgate-admission-cap-head"></div>')
        .append($("<b></b>").text(r.id))
        .append($("<span></span>").text(`${r.shadow ? ` ${t("usage.shadow")}` : ""} · ${r.scope} · ${r.window}`))
        .appendTo(cap);
      const bar = $('<div class="sendgate-admission-bar"></div>').appendTo(cap);
      $('<div class="sendgate-admission-bar-fill"></div>').css("width", `${Math.round(r.fraction * 100)}%`).toggleClass("sendgate-admission-bar-full", r.full).appendTo(bar);
      let text = t("usage.text", { count: r.count, max: r.max, remaining: r.remaining });
      if (r.full) text += ` · ${t(r.shadow ? "usage.wouldRefuse" : "usage.free", { wait: formatSeconds(r.retry, t) })}`;
      $('<div class="sendgate-admission-cap-text"></div>').text(text).appendTo(cap);
    }
  }

  /** A titled list of lines (held msgs, verdicts), each with its gate's name and time. */
  function showLines(kind: "held" | "history", lines: readonly RecipientLine[], empty: string | undefined): void {
    if (lines.length === 0 && empty === undefined) return;
    const box = $('<div class="sendgate-admission-recipient"></div>').attr("data-lines", kind).appendTo(result);
    $('<div class="sendgate-admission-usage-head"></div>').text(t(kind === "held" ? "heldList.head" : "history.head")).appendTo(box);
    if (lines.length === 0) $('<div class="sendgate-admission-empty"></div>').text(empty ?? "").appendTo(box);
    for (const line of lines) {
      const time = Number.isFinite(line.at) ? new Date(line.at).toLocaleTimeString() : "";
      $('<div class="sendgate-admission-line"></div>').attr("data-outcome", line.outcome)
        .append($("<span class=\"sendgate-admission-line-time\"></span>").text(time), " ", $("<b></b>").text(gateLabel(line.gate)), " ", $("<span></span>").text(line.text))
        .appendTo(box);
    }
  }

  function showRefusal(text: string): void {
    result.empty();
    $('<div class="sendgate-admission-refusal"></div>').text(text).appendTo(result);
  }

  function inspect(): void {
    const config = String(configSelect.val() ?? "");
    if (!config) {
      showRefusal(t("refusal.noConfig"));
      return;
    }
    const query: Record<string, string> = { recipient: String(recipientInput.val() ?? "").trim(), channel: String(channelInput.val() ?? "").trim() };
    const org = String(orgInput.val() ?? "").trim();
    if (org) query.org = org;
    if (!query.recipient) {
      showRefusal(t("refusal.noRecipient"));
      return;
    }
    result.empty().append($('<div class="sendgate-admission-empty"></div>').text(t("reading")));
    const base = `frequency-cap/${encodeURIComponent(config)}`;
    const whose: Record<string, string> = { recipient: query.recipient };
    if (org) whose.org = org;
    // the three at once; the held msgs and verdicts show under the caps, and only if the caps could be read
    const read = (path: string, data: Record<string, string>): JQuery.jqXHR => $.ajax({ url: `${base}/${path}`, data, dataType: "json", cache: false });
    const held = read("held", whose);
    const history = read("history", whose);
    read("usage", query)
      .done((body: UsageBody & { caps?: unknown[] }) => {
        showUsage(body);
        held.done((heldBody: { complete?: boolean; scanned?: number }) => {
          const lines = heldLines(heldBody, Date.now(), t);
          showLines("held", lines, undefined);
          if (heldBody.complete === false) $('<div class="sendgate-admission-empty"></div>').text(t("heldList.partial", { scanned: heldBody.scanned ?? 0 })).appendTo(result);
        }).always(() => {
          history.done((historyBody: unknown) => showLines("history", historyLines(historyBody, t), t(historyOff(historyBody) ? "history.off" : "history.none")));
        });
      })
      .fail((xhr: JQuery.jqXHR) => showRefusal(refusal(xhr.status, xhr.responseJSON, t)));
  }

  inspectButton.on("click", inspect);
  element.on("keydown", "input, select", (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    inspect();
  });

  return {
    element,
    setConfigs(names, usable) {
      const selected = String(configSelect.val() ?? "");
      configSelect.empty();
      const ordered = [...names].sort((a, b) => Number(usable(b[0])) - Number(usable(a[0])) || a[1].localeCompare(b[1]));
      for (const [id, name] of ordered) $("<option></option>").attr("value", id).text(name).appendTo(configSelect);
      if (selected && names.has(selected)) configSelect.val(selected);
    },
  };
}
