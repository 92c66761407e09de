// dynalite ships no types: the part the local stack uses.
declare module 'dynalite' {
  import type { Server } from 'node:http';

  interface DynaliteOptions {
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    /** A LevelDB directory; in memory when absent. */
    path?: string;
  }
  export default function dynalite(options?: DynaliteOptions): Server;
}
