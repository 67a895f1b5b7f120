/**
 * The parts of the Node-RED editor's `RED` global and its jQuery widgets that
 * the dialogs use, typed as Node-RED 4 and 5 provide them.
 */
export type MessageParams = Readonly<Record<string, string | number>>;

/** A node (or config node) as the editor holds it while its dialog is open. */
export interface EditorNode {
  id: string;
  type: string;
  credentials?: Record<string, unknown>;
  [property: string]: unknown;
}

/** A `defaults` validator: `opt` is passed when the editor wants the reason as text. */
export type Validator = (this: EditorNode, value: unknown, opt?: unknown) => boolean | string;

export interface AceEditor {
  getValue(): string;
  setValue(value: string, cursor?: number): void;
  getSession(): { on(event: "change", handler: () => void): void };
  resize(): void;
  destroy(): void;
  /** Monaco's (Node-RED's default code editor) only */
  updateOptions?(options: { inlineSuggest?: { enabled: boolean } }): void;
  /** Monaco's only: the text model the editor shows */
  getModel?(): { isDisposed(): boolean; dispose(): void } | null;
  /** Monaco's only */
  setModel?(model: null): void;
}

export interface EditorTabs {
  addTab(tab: { id: string; label: string }): void;
  resize(): void;
}

export interface EditableListOptions<T> {
  addButton?: string | boolean;
  addItem?: (row: JQuery, index: number, data: T) => void;
  removeItem?: (data: T) => void;
  sortItems?: (items: JQuery) => void;
  sortable?: boolean;
  removable?: boolean;
  height?: string | number;
  scrollOnAdd?: boolean;
}

/** A TypedInput type of a node's own (hasValue false: the type alone is the value, e.g. "org"). */
export interface TypedInputType {
  value: string;
  label: string;
  icon?: string;
  hasValue?: boolean;
}

export interface TypedInputOptions {
  default?: string;
  types: (string | TypedInputType)[];
  typeField?: JQuery | string;
}

export interface RedEditorApi {
  _(key: string, params?: MessageParams): string;
  validators: { typedInput(options: { typeField: string }): Validator };
  notify(text: string, type?: "warning" | "error" | "success" | "compact"): unknown;
  editor: {
    createEditor(options: { id: string; mode: string; value: string }): AceEditor;
    editJSON(options: { title?: string; value: string; complete: (value: string) => void }): void;
  };
  tabs: { create(options: { id: string; onchange: (tab: { id: string }) => void }): EditorTabs };
  events: { on(event: string, handler: (...args: unknown[]) => void): void };
}

declare global {
  const RED: RedEditorApi;
  interface JQuery {
    typedInput(options: TypedInputOptions): JQuery;
    editableList<T>(options: EditableListOptions<T>): JQuery;
    editableList(method: "addItem", data: unknown): JQuery;
    editableList(method: "empty"): JQuery;
    editableList(method: "items"): JQuery;
    editableList(method: "getItemAt", index: number): unknown;
    spinner(options: { min?: number; max?: number }): JQuery;
  }
}
