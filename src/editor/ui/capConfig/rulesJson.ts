import { checkRules } from "../../model/ruleChecks";
import { t } from "../i18n";
import type { AceEditor } from "../red";

const MAX_SHOWN_PROBLEMS = 8;

/** The caps as JSON text, to paste or copy, checked as it is typed with the same messages as the table and the runtime. */
export class RulesJson {
  readonly editor: AceEditor;
  /** the text when the editor was destroyed: an input's late change event (its blur as the dialog closes) must not reach a disposed editor */
  private closedWith: string | undefined;

  constructor(editorId: string, text: string, private readonly problemsBox: JQuery, private readonly channels: () => string[]) {
    this.editor = RED.editor.createEditor({ id: editorId, mode: "json", value: text });
    // Monaco asks for inline completions as the text is typed; Node-RED's destroy disposes the text
    // model before the editor, and that pending request then reads the disposed model ("Model is
    // disposed!" thrown from a timer). Rules have no inline completions to offer: switched off.
    // Ace, the other editor Node-RED can use, has no such option and no such request.
    this.editor.updateOptions?.({ inlineSuggest: { enabled: false } });
    this.editor.getSession().on("change", () => this.showProblems());
  }

  text(): string {
    return this.closedWith ?? this.editor.getValue();
  }

  setText(text: string): void {
    if (this.closedWith !== undefined) return;
    this.editor.setValue(text, -1);
    this.showProblems();
  }

  /** Opens the text in Node-RED's large JSON editor. */
  expand(): void {
    RED.editor.editJSON({
      title: t("cap-config.rules.jsonEditorTitle"),
      value: this.text(),
      complete: (value) => this.setText(value),
    });
  }

  showProblems(): void {
    if (this.closedWith !== undefined) return;
    const text = this.text();
    const problems = checkRules(text.trim() === "" ? [] : text, this.channels(), t);
    const box = this.problemsBox.empty();
    if (problems.length === 0) {
      let count = 0;
      try {
        count = text.trim() === "" ? 0 : (JSON.parse(text) as unknown[]).length;
      } catch {
        count = 0;
      }
      box.removeClass("node-config-cap-invalid").addClass("node-config-cap-valid")
        .text(count === 0 ? t("cap-config.rules.none") : count === 1 ? t("cap-config.rules.validOne") : t("cap-config.rules.valid", { count }));
      return;
    }
    box.removeClass("node-config-cap-valid").addClass("node-config-cap-invalid");
    const list = $("<ul></ul>").appendTo(box);
    for (const p of problems.slice(0, MAX_SHOWN_PROBLEMS)) $("<li></li>").text(p).appendTo(list);
    if (problems.length > MAX_SHOWN_PROBLEMS) $("<li></li>").text(t("cap-config.rules.more", { count: problems.length - MAX_SHOWN_PROBLEMS })).appendTo(list);
  }

  resize(): void {
    if (this.closedWith === undefined) this.editor.resize();
  }

  destroy(): void {
    if (this.closedWith !== undefined) return;
    this.closedWith = this.editor.getValue();
    // Node-RED's destroy disposes Monaco's model while the editor still shows it, and a feature's
    // timer set before (a hover, a highlight, a check of the text) then reads the disposed model
    // ("Model is disposed!"). Taken off the editor first, the model is let go by every feature
    // while it still lives; Node-RED's destroy then finds none, so it is disposed here.
    const model = this.editor.getModel?.();
    this.editor.setModel?.(null);
    this.editor.destroy();
    if (model && !model.isDisposed()) model.dispose();
  }
}
