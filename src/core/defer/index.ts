export type { DeferInput, DeferItem, DeferQueue, DeferResult, DeferredMsg } from "./deferQueue";
export { MAX_MERGED } from "./deferQueue";
export { RedisDeferQueue, deferKeys, type DeferKeys, type DeferScope } from "./redisDeferQueue";
export { MemoryDeferQueue, type DeferClock, type QueueChange } from "./memoryDeferQueue";
export { MemoryDeferStore } from "./memoryDeferStore";
export { DeferPoller, type DeferPollerOptions } from "./deferPoller";
export { deferCodec, plainCodec, type DeferCodec } from "./deferCodec";
export { LocalGateRegistry, RedisGateRegistry, BEAT_MS, BEAT_TTL_MS, type GateRegistry } from "./gateRegistry";
export { migrateLegacyQueue, legacyDeferKeys } from "./legacyQueue";
