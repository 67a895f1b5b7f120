/** `work`'s value, or `fallback` when it fails or takes longer than `ms` (the timer is cleared either way). */
export function withTimeout<T>(work: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<T>((resolve) => { timer = setTimeout(() => resolve(fallback), ms); });
  return Promise.race([work.catch(() => fallback), late]).finally(() => clearTimeout(timer));
}
