import { SendFieldError } from "../errors";

/** A msg as a gate hands it to the queue: any object of JSON-able fields, an http in's req and res beside them. */
export type HeldForm = Record<string, unknown>;

/**
 * What of a msg survives the queue: everything a JSON round trip keeps (http
 * req/res objects do not). A msg JSON cannot hold (a circular reference, a
 * BigInt) is that msg's own problem: it goes to Catch, naming why.
 */
export function storedMsg(msg: object): HeldForm {
  return storedCopy("msg", queuedForm(msg));
}

/**
 * The msg as the queue is given it to keep, not copied (the queue's own JSON
 * is the copy): without an http in's req and res, which JSON cannot hold.
 */
export function queuedForm(msg: object): HeldForm {
  if (!Object.hasOwn(msg, "req") && !Object.hasOwn(msg, "res")) return msg as HeldForm;
  const { req: _req, res: _res, ...rest } = msg as HeldForm;
  return rest;
}

/** What a JSON round trip keeps of `value`; one JSON cannot hold is refused naming `field`. */
export function storedCopy<T>(field: string, value: T): T {
  try {
    return JSON.parse(JSON.stringify(value)) as T;
  } catch (err) {
    throw new SendFieldError(field, `cannot be held in the defer queue: ${(err as Error).message}`);
  }
}
