import { SendFieldError } from "./errors";

/** A NUL, or a surrogate that is not half of a pair. */
const NOT_PLAIN = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Refuses text no store keeps as it is, naming the field: PostgreSQL refuses a
 * NUL, and UTF-8 cannot carry an unpaired surrogate (it would come back as
 * another string, a key that no longer matches). Returns the text unchanged.
 */
export function plainText(field: string, value: string): string {
  const problem = plainTextProblem(value);
  if (problem !== undefined) throw new SendFieldError(field, problem);
  return value;
}

/** What plainText would refuse the text for, if anything (for a caller that names the field only when it must). */
export function plainTextProblem(value: string): string | undefined {
  // a loop over the units first: every send has several of these texts, and most hold neither a NUL nor a surrogate
  let suspect = false;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit === 0 || (unit >= 0xd800 && unit <= 0xdfff)) {
      suspect = true;
      break;
    }
  }
  return suspect && NOT_PLAIN.test(value) ? "must not contain NUL or an unpaired surrogate" : undefined;
}
