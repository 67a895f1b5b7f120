import { channelList } from "../../../core/channels";
import { splitList } from "../../model/lists";

/** The channels a cap may name: the built-in ones (src/core/channels.ts) and the cap-config's extra ones. */
export function knownChannels(extra: unknown): string[] {
  return channelList(Array.isArray(extra) ? extra.filter((c): c is string => typeof c === "string") : splitList(extra));
}

/** What the editor shows: the input while the dialog is open, else the stored value. */
export function editingValue(inputId: string, stored: unknown): unknown {
  const input = $(`#${inputId}`);
  return input.length > 0 ? input.val() : stored;
}
