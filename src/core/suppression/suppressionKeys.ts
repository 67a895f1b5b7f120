import { encodeKeyPart, recipientKeyBase } from "../caps/keys";

/** The recipient's block list (hash: channel or "*" -> entry), under the recipient's hash tag. */
export function blockListKey(prefix: string, org: string, recipient: string): string {
  return `${recipientKeyBase(prefix, org, recipient)}:s`;
}

/** The duplicate-content mark of one body to one recipient on one channel. */
export function duplicateMarkKey(prefix: string, org: string, recipient: string, channel: string, hash: string): string {
  return `${recipientKeyBase(prefix, org, recipient)}:d:${encodeKeyPart(channel)}:${hash}`;
}

/** The org's index of every block-list entry, for listing (never read on the send path). */
export function blockListIndexKey(prefix: string, org: string): string {
  return `${prefix}:{${encodeKeyPart(org)}}:sidx`;
}

export function blockListIndexField(channel: string, recipient: string): string {
  return `${encodeKeyPart(channel)}|${encodeKeyPart(recipient)}`;
}
