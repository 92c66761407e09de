/**
 * `work`'s outcome, or `whenLate()`'s (its value, or what it throws) once `ms` have passed first.
 * The work is not stopped: it goes on, and its later end is the caller's to observe or ignore.
 *
 * A plain timer, cleared as soon as the work ends first, and not keeping the process alive on its
 * own: no `AbortSignal.timeout`, whose abort builds an error with its stack, which work that ends
 * in time (every call but a rare late one) should not pay for.
 */
export function atMost<T, L>(work: Promise<T>, ms: number, whenLate: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<L>((resolve, reject) => {
    timer = setTimeout(
      () => {
        try {
          resolve(whenLate());
        } catch (error) {
          reject(error);
        }
      },
      Math.max(0, ms),
    );
    timer.unref?.();
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
