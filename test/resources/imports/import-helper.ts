import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { json, type TestApp } from '../../helper.ts'
import { untilValue } from '../../support/poll.ts'

export const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'fixtures', 'imports')
/** Export files of public projects (see test/fixtures/imports/README.md), kept beside the repository, not in it. */
export const UPSTREAM = process.env.IMPORT_FIXTURES_DIR ?? path.join(FIXTURES, 'upstream')

export type Headers = Record<string, string>

/** An upstream fixture's bytes, or null (with a note) when it has not been put in place. */
export function upstream (name: string): Buffer | null {
  const file = path.join(UPSTREAM, name)
  if (fs.existsSync(file)) return fs.readFileSync(file)
  process.stderr.write(`# ${file} is not there (see test/fixtures/imports/README.md): its test is skipped\n`)
  return null
}

export function fixture (name: string): Buffer {
  return fs.readFileSync(path.join(FIXTURES, name))
}

/** Polls an import until it has finished, checking Retry-After on every unfinished answer. */
export async function finished (t: TestApp, url: string, headers: Headers): Promise<any> {
  const read = async () => {
    const res = await t.request({ method: 'GET', url, headers })
    assert.equal(res.statusCode, 200, res.body)
    return { job: json(res), retryAfter: res.headers['retry-after'] }
  }
  const done = (r: { job: any, retryAfter: unknown }) => {
    const over = r.job.status === 'succeeded' || r.job.status === 'failed'
    assert.equal(r.retryAfter, over ? undefined : '1')
    return over
  }
  return (await untilValue(read, done, 120_000)).job
}

/** POSTs a file to /imports (202 expected) and waits for the job's end. */
export async function importFile (t: TestApp, body: Buffer | string, type: string, headers: Headers, query = ''): Promise<any> {
  const res = await t.request({ method: 'POST', url: `/imports${query}`, headers: { ...headers, 'content-type': type }, payload: body })
  assert.equal(res.statusCode, 202, res.body)
  assert.equal(res.headers.location, `/imports/${json(res).id}`)
  return await finished(t, res.headers.location!, headers)
}

/** Every post as an admin reads it, in id order. */
export async function allPosts (t: TestApp, headers: Headers): Promise<any[]> {
  const list = json(await t.request({ method: 'GET', url: '/posts?sort=id&limit=100', headers }))
  return await Promise.all(list.map(async (p: { id: number }) => json(await t.request({ method: 'GET', url: `/posts/${p.id}`, headers }))))
}

/** A small WXR 1.2 file of `items` (each the inside of an <item>). */
export function wxr (items: string[], prolog = ''): string {
  return `<?xml version="1.0" encoding="UTF-8" ?>${prolog}
<rss version="2.0" xmlns:excerpt="http://wordpress.org/export/1.2/excerpt/" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:wp="http://wordpress.org/export/1.2/">
<channel><title>t</title><link>https://t.example</link><wp:wxr_version>1.2</wp:wxr_version>
${items.map(i => `<item>${i}</item>`).join('\n')}
</channel></rss>
`
}

/** The inside of a WXR post item. */
export function wxrPost (id: number, title: string, content = `<p>Post ${id}.</p>`, extra = ''): string {
  return `<title>${title}</title><link>https://t.example/p/${id}/</link><dc:creator>writer</dc:creator><guid isPermaLink="false">https://t.example/?p=${id}</guid>` +
    `<content:encoded><![CDATA[${content}]]></content:encoded><excerpt:encoded><![CDATA[]]></excerpt:encoded><wp:post_id>${id}</wp:post_id>` +
    `<wp:post_date_gmt>2021-01-0${1 + (id % 9)} 10:00:00</wp:post_date_gmt><wp:post_name>p-${id}</wp:post_name><wp:status>publish</wp:status><wp:post_type>post</wp:post_type>${extra}`
}
