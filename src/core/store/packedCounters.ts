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

const TOKEN_SPAN = 65536;

export function packTail(digest: number, token: number): number {
  return digest * TOKEN_SPAN + token;
}

export function digestOf(tail: number): number {
  return Math.floor(tail / TOKEN_SPAN);
}

export function tokenOf(tail: number): number {
  return tail % TOKEN_SPAN;
}

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
 * `expiresAt`; undefined when no field is left. A field keeps its place, a new
 * one goes last (as a Map keeps them), and of two writes of one field the last
 * counts.
 */
export function repacked(packed: PackedCounters | undefined, expiresAt: number, writes: readonly FieldWrite[]): PackedCounters | undefined {
  const lastWrite = (name: string): FieldWrite | undefined => {
    for (let i = writes.length - 1; i >= 0; i--) if (writes[i].field === name) return writes[i];
    return undefined;
  };
  // a new field goes where it was first written, with what it was written last
  const fresh = writes.filter((w, index) => writes.findIndex((x) => x.field === w.field) === index && entriesOf(packed, w.field).to === 0);
  let length = 1;
  for (const w of fresh) {
    const pairs = (lastWrite(w.field) as FieldWrite).pairs.length;
    if (pairs > 0) length += 1 + pairs;
  }
  forEachField(packed, (name, from, to) => {
    const w = lastWrite(name);
    const pairs = w === undefined ? to - from : w.pairs.length;
    if (pairs > 0) length += 1 + pairs;
  });
  if (length === 1) return undefined;
  const out = sized(length);
  out[0] = expiresAt;
  let at = 1;
  const put = (name: string, pairs: ArrayLike<number | string>, from: number, to: number): void => {
    if (to === from) return;
    out[at++] = name;
    for (let j = from; j < to; j++) out[at++] = pairs[j];
  };
  forEachField(packed, (name, from, to) => {
    const w = lastWrite(name);
    if (w === undefined) put(name, packed as PackedCounters, from, to);
    else put(name, w.pairs, 0, w.pairs.length);
  });
  for (const w of fresh) {
    const last = lastWrite(w.field) as FieldWrite;
    put(w.field, last.pairs, 0, last.pairs.length);
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

/** Each field and its entries, as a snapshot lists them. */
export function unpacked(packed: PackedCounters): [string, Entry[]][] {
  const fields: [string, Entry[]][] = [];
  let entries: Entry[] = [];
  for (let i = 1; i < packed.length; i++) {
    const item = packed[i];
    if (typeof item === "string") {
      entries = [];
      fields.push([item, entries]);
    } else {
      const tail = packed[++i] as number;
      entries.push([item, digestOf(tail), tokenOf(tail)]);
    }
  }
  return fields;
}

/** `[key,{"expiresAt":…,"fields":[[field,[[ts,digest,token],…]],…]}]`: the text JSON.stringify makes of the entry `unpacked` would give. */
export function packedJson(key: string, packed: PackedCounters): string {
  let text = `[${JSON.stringify(key)},{"expiresAt":${packed[0] as number},"fields":[`;
  let entries = 0;
  for (let i = 1; i < packed.length; i++) {
    const item = packed[i];
    if (typeof item === "string") {
      text += `${i === 1 ? "" : "]],"}[${JSON.stringify(item)},[`;
      entries = 0;
    } else {
      const tail = packed[++i] as number;
      text += `${entries++ === 0 ? "" : ","}[${item},${digestOf(tail)},${tokenOf(tail)}]`;
    }
  }
  return `${text}${packed.length > 1 ? "]]" : ""}]}]`;
}

/** A snapshot's fields packed, expiring at `expiresAt`; undefined when they hold no entry. */
export function packed(expiresAt: number, fields: readonly [string, readonly Entry[]][]): PackedCounters | undefined {
  return repacked(undefined, expiresAt, fields.map(([field, entries]) => ({ field, pairs: entries.flatMap(([ts, digest, token]) => [ts, packTail(digest, token)]) })));
}
