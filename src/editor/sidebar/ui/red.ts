/**
 * The parts of the editor's `RED` that the Admission sidebar uses, as
 * Node-RED 4 and 5 provide them. The plugin passes RED to mount(): the
 * sidebar reads no global of its own but jQuery's `$`.
 */
export interface NodeStatus {
  fill?: string;
  shape?: string;
  text?: string;
}

export interface SidebarNode {
  id: string;
  type: string;
  name?: string;
  /** its tab or subflow */
  z?: string;
  /** disabled */
  d?: boolean;
  config?: string;
  valid?: boolean;
  validationErrors?: string[];
  status?: NodeStatus;
  changed?: boolean;
  _def?: { label?: string | ((this: SidebarNode) => string) };
}

export interface Workspace {
  id: string;
  label: string;
  disabled?: boolean;
}

export interface SidebarTabOptions {
  id: string;
  label: string;
  name: string;
  iconClass: string;
  content: JQuery;
  enableOnEdit: boolean;
  pinned: boolean;
  onchange: () => void;
}

export type Handler = (...args: unknown[]) => void;

export interface SidebarRed {
  _(key: string, params?: Readonly<Record<string, string | number>>): string;
  nodes: {
    node(id: string): SidebarNode | null | undefined;
    eachNode(callback: (node: SidebarNode) => boolean | void): void;
    eachConfig(callback: (node: SidebarNode) => boolean | void): void;
    eachWorkspace(callback: (workspace: Workspace) => void): void;
    eachSubflow(callback: (subflow: { id: string; name: string }) => void): void;
  };
  view: { reveal(id: string): void };
  sidebar: { addTab(options: SidebarTabOptions): void; removeTab(id: string): void };
  comms: {
    subscribe(topic: string, callback: (topic: string, message: unknown) => void): void;
    unsubscribe(topic: string, callback: (topic: string, message: unknown) => void): void;
  };
  events: { on(event: string, handler: Handler): void; off(event: string, handler: Handler): void };
  settings: { get(key: string, fallback?: unknown): unknown };
}
