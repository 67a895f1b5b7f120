/**
 * The one JSON Schema for a frequency cap (SPEC §4). The editor, the admin API
 * and the PostgreSQL loader all validate against it.
 *
 * A calendar window still names `window_seconds` (the column is required); the
 * period itself is the recipient's local day or week.
 */
export const WINDOW_TYPES = ["rolling", "calendar_day", "calendar_week", "lifetime"] as const;
export const COUNTS = ["per_recipient", "total"] as const;
export const DISPOSITIONS = ["skip", "defer", "collapse"] as const;
export const ENFORCEMENTS = ["enforce", "shadow"] as const;
export const MAX_WINDOW_SECONDS = 366 * 86400;
/** a recipient's cap keeps one entry per send; a total cap one number per time bucket, so it may count far more */
export const MAX_RECIPIENT_COUNT = 1_000_000;
/** under PostgreSQL's integer column */
export const MAX_TOTAL_COUNT = 2_000_000_000;

/**
 * Text that every store keeps as it is: no NUL (PostgreSQL refuses it) and no
 * unpaired surrogate (UTF-8 cannot carry one, so it would come back as
 * another string). With ajv's unicode patterns a paired surrogate is one code
 * point, so only a lone one matches the class.
 */
export const PLAIN_TEXT = "^[^\\u0000\\uD800-\\uDFFF]*$";

const nonEmptyString = { type: "string", minLength: 1, maxLength: 256, pattern: PLAIN_TEXT } as const;

export const capRuleSchema = {
  $id: "https://sendgate.dev/schema/frequency-cap.json",
  type: "object",
  additionalProperties: false,
  required: ["id", "scope", "max_count", "window_seconds"],
  properties: {
    id: { type: "string", minLength: 1, maxLength: 128, pattern: PLAIN_TEXT },
    org: nonEmptyString,
    name: { type: "string", maxLength: 256, pattern: PLAIN_TEXT },
    enabled: { type: "boolean" },
    scope: { enum: ["channel", "global"] },
    channel: nonEmptyString,
    max_count: { type: "integer", minimum: 1, maximum: MAX_TOTAL_COUNT },
    window_seconds: { type: "integer", minimum: 1, maximum: MAX_WINDOW_SECONDS },
    window_type: { enum: [...WINDOW_TYPES] },
    applies_to_categories: { type: "array", items: nonEmptyString, uniqueItems: true },
    per: { type: "array", items: nonEmptyString, uniqueItems: true, maxItems: 8 },
    match: {
      type: "object",
      propertyNames: { minLength: 1, pattern: PLAIN_TEXT },
      additionalProperties: { type: "array", items: { type: "string", pattern: PLAIN_TEXT }, minItems: 1 },
    },
    disposition: { enum: [...DISPOSITIONS] },
    enforcement: { enum: [...ENFORCEMENTS] },
    counts: { enum: [...COUNTS] },
    created_at: { type: "string" },
    updated_at: { type: "string" },
  },
  allOf: [
    {
      if: { properties: { scope: { const: "channel" } }, required: ["scope"] },
      then: {
        required: ["channel"],
        properties: { channel: { not: { const: "*" } } },
      },
    },
    {
      if: { properties: { scope: { const: "global" } }, required: ["scope"] },
      then: { properties: { channel: { const: "*" } } },
    },
    {
      if: { not: { properties: { counts: { const: "total" } }, required: ["counts"] } },
      then: { properties: { max_count: { type: "integer", maximum: MAX_RECIPIENT_COUNT } } },
    },
    {
      // a recipient's counter would never forget: only an org-wide total may count for ever
      if: { properties: { window_type: { const: "lifetime" } }, required: ["window_type"] },
      then: { required: ["counts"], properties: { counts: { const: "total" } } },
    },
  ],
} as const;
