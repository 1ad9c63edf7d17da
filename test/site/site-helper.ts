import fs from 'node:fs'
import type { FastifyBaseLogger } from 'fastify'
import { buildSite, type Site } from '../../src/site/site.ts'
import { CHROMIUM } from '../admin/browser.ts'
import { buildTestApp, freePort, json, type StoreKind, type TestApp, underCI } from '../helper.ts'
import { png } from '../resources/media/images.ts'
import { closeWhenDone, once } from '../support/hooks.ts'

/** The app and its reading site, listening on a port of its own, as `npm start` runs them. */
export interface TestSite {
  readonly t: TestApp
  readonly site: Site
  /** The site's origin (`http://127.0.0.1:<port>`). */
  readonly url: string
  /** GET (or `method`) on the site through its socket; redirects are not followed. */
  get (path: string, init?: RequestInit): Promise<Response>
  close (): Promise<void>
}

/**
 * `log`: the site's logger instead of the app's (a test that reads what it logs); `databaseUrl`:
 * another instance's database (two instances behind a load balancer).
 */
export async function buildTestSite (kind: StoreKind, env: Record<string, string> = {}, log?: FastifyBaseLogger, databaseUrl?: string): Promise<TestSite> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const t = await buildTestApp(kind, { SITE_PORT: String(port), SITE_BASE_URL: url, HOST: '127.0.0.1', RATE_LIMIT_MAX: '0', ...env }, { selfClosing: false, ...(databaseUrl === undefined ? {} : { url: () => databaseUrl }) })
  let site: Site
  try {
    site = await buildSite(log === undefined ? t.context : { ...t.context, log }, t.app)
    await site.app.listen({ port, host: '127.0.0.1' })
  } catch (err) {
    await t.close()
    throw err
  }
  const made: TestSite = {
    t,
    site,
    url,
    get: async (path, init = {}) => await fetch(`${url}${path}`, { redirect: 'manual', ...init }),
    close: once(async () => {
      await site.app.close()
      await t.close()
    }),
  }
  closeWhenDone(made.close)
  return made
}

/** Publishes a post through the API; its representation. */
export async function publish (t: TestApp, body: Record<string, unknown>, auth?: { authorization: string }): Promise<any> {
  const res = await t.request({ method: 'POST', url: '/posts', headers: auth ?? await t.auth('ann', ['admin']), payload: { status: 'published', content: 'Some words here.', ...body } })
  if (res.statusCode !== 201) throw new Error(`POST /posts answered ${res.statusCode}: ${res.body}`)
  return json(res)
}

/** The author of the site tests' posts: Ann Writer, `ann`, a profile without a password. */
export async function addAuthor (t: TestApp): Promise<{ id: string }> {
  return await t.store.transaction(async uow => await t.context.services.identity.createUser(uow, { email: 'ann@example.com', name: 'Ann Writer', role: 'author', passwordHash: null, slug: 'ann' }))
}

/** A PNG of `width` × `height` uploaded to the media library with `alt`; its representation. */
export async function addImage (t: TestApp, auth: { authorization: string }, width: number, height: number, alt: string): Promise<any> {
  const image = json(await t.request({ method: 'POST', url: '/media', headers: { ...auth, 'content-type': 'image/png' }, payload: await png(width, height) }))
  await t.request({ method: 'PATCH', url: `/media/${image.id as string}`, headers: { ...auth, 'content-type': 'application/merge-patch+json' }, payload: { alt } })
  return image
}

/** Why the site's browser tests cannot run (no Chromium), or false; under CI a missing browser fails instead. */
export function chromiumMissing (): string | false {
  if (fs.existsSync(CHROMIUM)) return false
  if (underCI()) throw new Error(`CI=true but ${CHROMIUM} is missing (run sh scripts/install-browser.sh)`)
  return `${CHROMIUM} is missing (run sh scripts/install-browser.sh)`
}
