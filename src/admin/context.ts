/** What the admin routes read: the front, the stats collector, and the boot settings they report. */
import type { Front } from '../front/front';
import type { StatsCollector } from './stats';

export interface AdminContext {
  front: Front;
  stats: StatsCollector;
  memoryOnly: boolean;
  walSync: string;
  dataDir: string;
}
