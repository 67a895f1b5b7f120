/**
 * The names the sidebar shows for cap-configs: the node's name, else the
 * label the editor gives it ("memory · 2 caps"); two that would read the same
 * are told apart by the end of their ids, never shown by id alone.
 */
export interface NamedConfig {
  id: string;
  name: string;
  /** the editor's label when it has no name */
  label: string;
}

export function configNames(configs: readonly NamedConfig[]): Map<string, string> {
  const shown = configs.map((c) => ({ id: c.id, text: c.name.trim() !== "" ? c.name : c.label.trim() !== "" ? c.label : "cap-config" }));
  const uses = new Map<string, number>();
  for (const s of shown) uses.set(s.text, (uses.get(s.text) ?? 0) + 1);
  return new Map(shown.map((s) => [s.id, (uses.get(s.text) ?? 0) > 1 ? `${s.text} · ${s.id.slice(-4)}` : s.text]));
}
