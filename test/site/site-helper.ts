import type { FastifyBaseLogger } from 'fastify'
import { buildSite, type Site } from '../../src/site/site.ts'
import { buildTestApp, freePort, json, type StoreKind, type TestApp } from '../helper.ts'

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
  const t = await buildTestApp(kind, { SITE_PORT: String(port), SITE_BASE_URL: url, HOST: '127.0.0.1', RATE_LIMIT_MAX: '0', ...env }, databaseUrl === undefined ? {} : { url: () => databaseUrl })
  let site: Site
  try {
    site = await buildSite(log === undefined ? t.context : { ...t.context, log }, t.app)
    await site.app.listen({ port, host: '127.0.0.1' })
  } catch (err) {
    await t.close()
    throw err
  }
  return {
    t,
    site,
    url,
    get: async (path, init = {}) => await fetch(`${url}${path}`, { redirect: 'manual', ...init }),
    async close () {
      await site.app.close()
      await t.close()
    },
  }
}

/** Publishes a post through the API; its representation. */
export async function publish (t: TestApp, body: Record<string, unknown>, auth?: { authorization: string }): Promise<any> {
  const res = await t.request({ method: 'POST', url: '/posts', headers: auth ?? await t.auth('ann', ['admin']), payload: { status: 'published', content: 'Some words here.', ...body } })
  if (res.statusCode !== 201) throw new Error(`POST /posts answered ${res.statusCode}: ${res.body}`)
  return json(res)
}
