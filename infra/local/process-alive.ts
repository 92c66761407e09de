/** Whether a process of this pid runs. */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether what `owner` names (a pid read from a leftover's name or lock file) belongs to a process
 * that has ended: the local stack's leftovers are named after their owner's pid. Not a pid (a name
 * of another form): unknown, so not ended.
 */
export function ownerEnded(owner: number): boolean {
  return Number.isInteger(owner) && owner > 0 && !processAlive(owner);
}
