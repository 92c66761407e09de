/** Whether a process of this pid runs (the local stack's leftovers are named after their owner's pid). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
