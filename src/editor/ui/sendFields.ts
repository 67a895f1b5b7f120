import type { EditorNode, Validator } from "./red";
import { t } from "./i18n";

/**
 * The send fields a gate reads (SPEC §2), each a TypedInput pair
 * `<field>` / `<field>Type` whose default is msg.<field> (the body: msg.payload).
 * A gate lists the fields it decides on; those it only checks (so a bad send is
 * caught at the first gate) sit under "Send fields", folded, with the reason.
 */
export type SendField =
  | "recipient" | "channel" | "category" | "tier" | "messageId" | "org"
  | "attributes" | "recipientLimits" | "timezone" | "expiresAt" | "body";

export interface GateFields {
  decides: readonly SendField[];
  checks: readonly SendField[];
}

const FIELD_TYPES = ["msg", "flow", "global", "env", "jsonata", "str"];
const PLACEHOLDER_CLASS = "sendgate-send-fields";

export function defaultPathOf(field: SendField): string {
  return field === "body" ? "payload" : field;
}

/** The `defaults` validator of a send field: checked as a TypedInput against its `<field>Type`. */
export function sendFieldValidator(field: SendField): Validator {
  return RED.validators.typedInput({ typeField: `${field}Type` });
}

function rowHtml(field: SendField): string {
  const label = $("<label></label>").attr("for", `node-input-${field}`).text(t(`sendgate.fields.${field}`));
  return `<div class="form-row sendgate-field-row">${label.prop("outerHTML") as string}` +
    ` <input type="text" id="node-input-${field}" style="width: 70%;">` +
    ` <input type="hidden" id="node-input-${field}Type"></div>`;
}

function groupsHtml(fields: GateFields): string {
  const heading = $('<div class="form-row sendgate-fields-heading"><label style="width: auto;"><i class="fa fa-envelope-o"></i> <b></b></label></div>');
  heading.find("b").text(t("sendgate.fields.heading"));
  let html = fields.decides.length > 0 ? (heading.prop("outerHTML") as string) + fields.decides.map(rowHtml).join("") : "";
  if (fields.checks.length > 0) {
    const toggle = $('<div class="form-row sendgate-checked-heading"><a href="#" class="sendgate-checked-toggle"><i class="fa fa-caret-right"></i> <b></b></a>' +
      '<div class="form-tips sendgate-checked-reason"></div></div>');
    toggle.find("b").text(t("sendgate.fields.sendFields"));
    toggle.find(".sendgate-checked-reason").text(t("sendgate.fields.sendFieldsReason"));
    html += (toggle.prop("outerHTML") as string) + `<div class="sendgate-checked-fields">${fields.checks.map(rowHtml).join("")}</div>`;
  }
  return html;
}

/**
 * Writes the field rows into a gate's edit template, in place of its
 * `<div class="sendgate-send-fields"></div>`, before the editor first builds
 * the dialog from it: the inputs are then there when the editor fills them from
 * the node and watches them for validation, as for any row of the template.
 */
export function writeFieldRows(type: string, fields: GateFields): void {
  const template = $(`script[data-template-name='${type}']`);
  const html = template.html();
  const placeholder = `<div class="${PLACEHOLDER_CLASS}"></div>`;
  if (template.length === 0 || !html.includes(placeholder)) return;
  template.html(html.replace(placeholder, groupsHtml(fields)));
}

/** For oneditprepare: each field's TypedInput, showing msg.<field> when the node leaves the pair out. */
export function prepareFieldInputs(node: EditorNode, fields: GateFields): void {
  // should the template not have been rewritten (an editor that did not announce the type), build the rows now
  const placeholder = $(`.${PLACEHOLDER_CLASS}`);
  if (placeholder.length > 0) {
    placeholder.replaceWith(groupsHtml(fields));
    for (const field of [...fields.decides, ...fields.checks]) {
      if (typeof node[field] === "string") $(`#node-input-${field}`).val(node[field]);
      if (typeof node[`${field}Type`] === "string") $(`#node-input-${field}Type`).val(node[`${field}Type`] as string);
    }
  }
  for (const field of [...fields.decides, ...fields.checks]) {
    const input = $(`#node-input-${field}`);
    const typeInput = $(`#node-input-${field}Type`);
    if (!node[field]) input.val(defaultPathOf(field));
    if (!node[`${field}Type`]) typeInput.val("msg");
    input.typedInput({ default: "msg", types: FIELD_TYPES, typeField: typeInput });
  }
  // the checked-only group starts folded unless one of its fields reads from somewhere else than msg.<field>
  const changed = fields.checks.some((f) => (node[`${f}Type`] ?? "msg") !== "msg" || (node[f] ?? defaultPathOf(f)) !== defaultPathOf(f));
  const group = $(".sendgate-checked-fields");
  const caret = $(".sendgate-checked-toggle i");
  const show = (open: boolean): void => {
    group.toggle(open);
    caret.toggleClass("fa-caret-right", !open).toggleClass("fa-caret-down", open);
  };
  show(changed);
  $(".sendgate-checked-toggle").on("click", (e) => {
    e.preventDefault();
    show(!group.is(":visible"));
  });
}
