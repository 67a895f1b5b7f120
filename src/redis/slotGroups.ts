import calculateSlot from "cluster-key-slot";

/**
 * The indexes of `items` grouped by the Redis Cluster hash slot of each
 * item's key, groups in order of first appearance and items in their order
 * within a group: one script call per group never touches two slots.
 */
export function bySlot<I>(items: readonly I[], keyOf: (item: I) => string): number[][] {
  const groups = new Map<number, number[]>();
  items.forEach((item, i) => {
    const slot = calculateSlot(keyOf(item));
    const group = groups.get(slot);
    if (group) group.push(i);
    else groups.set(slot, [i]);
  });
  return [...groups.values()];
}
