import { changesHandler } from '../../shared/lambda/change-feed.js';

/** GET /{tenant}/JsonAPI/Data/getChanges/{DataSource}[?token=][&rows=][&columns=] */
export const handler = changesHandler();
