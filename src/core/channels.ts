/** The channels every cap-config knows; a cap-config may add more (`channels`). */
export const DEFAULT_CHANNELS: readonly string[] = [
  "sms", "whatsapp", "email", "voice", "rcs", "viber", "line",
  "messenger", "instagram", "push", "telegram", "in_app",
];

export function channelList(extra: readonly string[] = []): string[] {
  return [...new Set([...DEFAULT_CHANNELS, ...extra.map((c) => c.trim()).filter((c) => c.length > 0)])];
}
