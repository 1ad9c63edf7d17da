import type { SettingsSection } from '../../config.ts'

/** The posts' settings: `config.editorial`. */
export interface EditorialSettings {
  /** REVISIONS_KEEP: the newest revisions of each post that are kept (older ones are pruned). */
  readonly revisionsKeep: number
  /**
   * The longest the scheduler sleeps without looking at the schedule again; it otherwise wakes
   * for the next due time, or when a unit of work on any instance changes the schedule.
   */
  readonly scheduleRescanMs: number
  /** SITEMAP_URLS_PER_FILE: past this many published posts, the sitemap is an index of parts of this size. */
  readonly sitemapUrlsPerFile: number
}

declare module '../../config.ts' { interface ResourceSettings { readonly editorial: EditorialSettings } }

export const editorialSettings: SettingsSection<'editorial'> = {
  name: 'editorial',
  read: env => ({
    revisionsKeep: env.int('REVISIONS_KEEP', 50, 1, 10_000),
    scheduleRescanMs: env.int('SCHEDULE_RESCAN_MS', 60_000, 100, 3_600_000),
    // sitemaps.org: at most 50 000 URLs in one file.
    sitemapUrlsPerFile: env.int('SITEMAP_URLS_PER_FILE', 50_000, 1, 50_000),
  }),
  rows: [
    { name: 'REVISIONS_KEEP', default: '50', description: 'How many of each post\'s newest revisions are kept (1–10 000); older ones are deleted with the change that makes one too many ([editorial.md](editorial.md)).' },
    { name: 'SCHEDULE_RESCAN_MS', default: '60000', description: 'The longest each instance\'s scheduler sleeps without looking at the schedule; it otherwise sleeps until the next `publish_at` and is woken when any instance changes the schedule.' },
    { name: 'SITEMAP_URLS_PER_FILE', default: '50000', description: 'How many posts one sitemap file lists (1–50 000, the sitemaps.org limit); past it `/sitemap.xml` is an index of `/sitemap-posts-{n}.xml` parts ([review.md](review.md)).' },
  ],
}
