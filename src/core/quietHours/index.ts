export { QuietHoursError } from "./errors";
export { checkTimeZone, localParts, offsetMs, wallClockMs, zonedTimeToInstant } from "./zone";
export type { LocalDateTime, LocalParts } from "./zone";
export { isQuiet, nextQuietStart, parseQuietWindow, parseTimeOfDay, quietUntil } from "./quietWindow";
export type { ParseQuietWindowOptions, QuietWindow } from "./quietWindow";
export { releaseAt } from "./jitter";
