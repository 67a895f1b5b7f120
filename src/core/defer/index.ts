export type { DeferInput, DeferQueue, DeferResult, DeferredMsg } from "./deferQueue";
export { RedisDeferQueue, deferKeys, type DeferKeys } from "./redisDeferQueue";
export { MemoryDeferQueue, type DeferClock, type DeferSnapshot } from "./memoryDeferQueue";
export { DeferPoller, type DeferPollerOptions } from "./deferPoller";
export { loadDeferSnapshot, saveDeferSnapshot } from "./deferPersistence";
