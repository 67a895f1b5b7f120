import calculateSlot from "cluster-key-slot";
import { uniquePrefix } from "./redis";

/** The slot ranges `redis-cli --cluster create` gives three masters (16,384 slots split in thirds). */
const THIRDS = [0, 5461, 10923, 16384] as const;

/**
 * A unique key prefix whose hash tag (`tagOf(prefix)`, braces included) lies
 * in the slots of master `index` (0–2) of a three-master OwnRedisCluster: a
 * suite whose tests each keep their keys in one slot spreads them over every
 * master by taking index 0, 1, 2 in turn, rather than leaving it to chance
 * (with random prefixes, k such tests miss a master with a chance of about
 * 3 × (2/3)^k: CI once found the defer queue suite's keys on 2 of 3).
 */
export function prefixOnMaster(label: string, index: number, tagOf: (prefix: string) => string): string {
  const from = THIRDS[index % 3] as number;
  const to = THIRDS[(index % 3) + 1] as number;
  for (;;) {
    const prefix = uniquePrefix(label);
    const slot = calculateSlot(tagOf(prefix));
    if (slot >= from && slot < to) return prefix;
  }
}
