import { SendFieldError } from "./errors";

/** A NUL, or a surrogate that is not half of a pair. */
const NOT_PLAIN = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Refuses text no store keeps as it is, naming the field: PostgreSQL refuses a
 * NUL, and UTF-8 cannot carry an unpaired surrogate (it would come back as
 * another string, a key that no longer matches). Returns the text unchanged.
 */
export function plainText(field: string, value: string): string {
  if (NOT_PLAIN.test(value)) throw new SendFieldError(field, "must not contain NUL or an unpaired surrogate");
  return value;
}
