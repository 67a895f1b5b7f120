/**
 * How many msgs a gate let through over the last second, for its status:
 * ten buckets of 100 ms, so counting costs the same at 10 or 10,000 msgs/s.
 */
export class RateMeter {
  private readonly buckets = new Array<number>(10).fill(0);
  private current = 0;

  constructor(private readonly clock: () => number = Date.now) {}

  add(n = 1): void {
    this.roll();
    this.buckets[this.current % 10] = (this.buckets[this.current % 10] ?? 0) + n;
  }

  /** msgs per second over the last second */
  perSecond(): number {
    this.roll();
    return this.buckets.reduce((a, b) => a + b, 0);
  }

  private roll(): void {
    const slot = Math.floor(this.clock() / 100);
    if (slot - this.current >= 10) this.buckets.fill(0);
    else for (let s = this.current + 1; s <= slot; s++) this.buckets[s % 10] = 0;
    this.current = Math.max(this.current, slot);
  }
}
