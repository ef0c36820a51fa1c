/**
 * Keeps the event loop polling (a chain of setImmediate, so libuv polls its sockets with a zero
 * timeout) for a window after each interactive request arrives or is answered, so that the next request
 * is read without the thread sleeping in epoll and being woken. On a virtual machine a wake-up of an idle
 * vCPU costs 0.1-0.3 ms (a profile of the lane on a 2-core VM: a third of the main thread's time in the
 * writev and postMessage calls that wake the other side), which is most of a 10^6-path price's latency
 * over HTTP. Off by default (window 0): it trades one core, busy while requests keep coming within the
 * window, for latency (TANDEM_LANE_SPIN_US).
 */
export class HotLoop {
  private until = 0;
  private spinning = false;
  /** Polls made while spinning (for tests and metrics). */
  polls = 0;

  /** @param windowUs how long the loop stays hot after the last touch; 0: never. */
  constructor(public windowUs: number) {}

  /** A request arrived or was answered: stay hot until `windowUs` from now. */
  touch(): void {
    if (this.windowUs <= 0) return;
    this.until = performance.now() + this.windowUs / 1000;
    if (this.spinning) return;
    this.spinning = true;
    setImmediate(this.spin);
  }

  get hot(): boolean {
    return this.spinning;
  }

  private readonly spin = (): void => {
    this.polls++;
    if (performance.now() < this.until) setImmediate(this.spin);
    else this.spinning = false;
  };
}
