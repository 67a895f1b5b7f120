import { digestOf, packTail, tokenOf } from "./counterEntry";
import type { JsonBytes } from "../jsonBytes";

/** One counter entry as a snapshot holds it (ts, digest of the messageId, attempt token), as lua/caps/claim.lua packs it. */
export type Entry = [ts: number, digest: number, token: number];

/**
 * A recipient's counter hash as the memory store keeps it: one flat array,
 * `[expiresAt, field, ts, tail, ts, tail, …, field, ts, tail, …]`. An entry is
 * two numbers, its time and its tail (the messageId's digest × 65536 + the
 * attempt's token, as the scripts pack it); a field is the string before its
 * entries. A Map of fields holding an array per entry made several objects
 * of every recipient, each with its own header and spare room, and the
 * embedded store must hold a million recipients in the heap of one
 * Node-RED. (A time or a tail is too large for V8 to keep inline, so each
 * is a number object of its own: the array saves the containers.)
 */
export type PackedCounters = (number | string)[];

export function expiresAtOf(packed: PackedCounters): number {
  return packed[0] as number;
}

/** Where `field`'s entries lie in `packed`: the index of its first ts, and the index past its last tail (both 0 when it has none). */
export function entriesOf(packed: PackedCounters | undefined, field: string): { from: number; to: number } {
  if (packed === undefined) return { from: 0, to: 0 };
  for (let i = 1; i < packed.length;) {
    const end = fieldEnd(packed, i);
    if (packed[i] === field) return { from: i + 1, to: end };
    i = end;
  }
  return { from: 0, to: 0 };
}

/** A field's entries after a call: `pairs` is [ts, tail, ts, tail, …]; none drops the field. */
export interface FieldWrite {
  field: string;
  pairs: readonly number[];
}

/**
 * An array of `length` slots, no more: one grown by push keeps spare room past
 * its end for as long as it lives, and a recipient's array lives for days.
 */
function sized(length: number): PackedCounters {
  return new Array<number | string>(length);
}

/**
 * `packed` (undefined: nothing yet) with `writes` applied, expiring at
 * `expiresAt`; undefined when no field is left. Of two writes of one field the
 * last counts; a field keeps its place, and a new one goes last, where it was
 * first written (as a Map keeps its keys).
 */
export function repacked(packed: PackedCounters | undefined, expiresAt: number, writes: readonly FieldWrite[]): PackedCounters | undefined {
  const written = new Map<string, readonly number[]>();
  for (const w of writes) written.set(w.field, w.pairs);
  const segments: { field: string; items: ArrayLike<number | string>; from: number; to: number }[] = [];
  forEachField(packed, (field, from, to) => {
    const pairs = written.get(field);
    if (pairs === undefined) {
      segments.push({ field, items: packed as PackedCounters, from, to });
    } else {
      written.delete(field);
      segments.push({ field, items: pairs, from: 0, to: pairs.length });
    }
  });
  for (const [field, pairs] of written) segments.push({ field, items: pairs, from: 0, to: pairs.length });
  let length = 1;
  for (const s of segments) if (s.to > s.from) length += 1 + s.to - s.from;
  if (length === 1) return undefined;
  const out = sized(length);
  out[0] = expiresAt;
  let at = 1;
  for (const s of segments) {
    if (s.to === s.from) continue;
    out[at++] = s.field;
    for (let j = s.from; j < s.to; j++) out[at++] = s.items[j];
  }
  return out;
}

/** Calls `visit` with each field and the indexes of its first ts and past its last tail. */
function forEachField(packed: PackedCounters | undefined, visit: (field: string, from: number, to: number) => void): void {
  if (packed === undefined) return;
  for (let i = 1; i < packed.length;) {
    const end = fieldEnd(packed, i);
    visit(packed[i] as string, i + 1, end);
    i = end;
  }
}

/** The index past the entries of the field at `i`. */
function fieldEnd(packed: PackedCounters, i: number): number {
  let end = i + 1;
  while (end < packed.length && typeof packed[end] === "number") end += 2;
  return end;
}

/** Writes `[key,{"expiresAt":…,"fields":[[field,[[ts,digest,token],…]],…]}]`, the snapshot's entry, as JSON.stringify would write it. */
export function writePackedJson(out: JsonBytes, key: string, packed: PackedCounters): void {
  out.raw("[");
  out.string(key);
  out.raw(',{"expiresAt":');
  out.number(packed[0] as number);
  out.raw(',"fields":[');
  let entries = 0;
  for (let i = 1; i < packed.length; i++) {
    const item = packed[i];
    if (typeof item === "string") {
      out.raw(i === 1 ? "[" : "]],[");
      out.string(item);
      out.raw(",[");
      entries = 0;
    } else {
      const tail = packed[++i] as number;
      out.raw(entries++ === 0 ? "[" : ",[");
      out.number(item);
      out.raw(",");
      out.number(digestOf(tail));
      out.raw(",");
      out.number(tokenOf(tail));
      out.raw("]");
    }
  }
  out.raw(packed.length > 1 ? "]]]}]" : "]}]");
}

/** A snapshot's fields packed, expiring at `expiresAt`; undefined when they hold no entry. */
export function packed(expiresAt: number, fields: readonly [string, readonly Entry[]][]): PackedCounters | undefined {
  return repacked(undefined, expiresAt, fields.map(([field, entries]) => ({ field, pairs: entries.flatMap(([ts, digest, token]) => [ts, packTail(digest, token)]) })));
}
