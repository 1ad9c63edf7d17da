import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import { buildTestApp, json, storeKinds, type TestApp } from '../../helper.ts'
import { png, sidewaysJpeg } from '../media/images.ts'
import { allPosts, type Headers, importFile, wxr, wxrPost } from './import-helper.ts'
import { before } from '../../support/hooks.ts'

const XML = 'application/xml'
const CAP = 50_000
const TIMEOUT_MS = 300
const FETCHING = { IMPORT_POLL_MS: '20', RATE_LIMIT_MAX: '0', IMPORT_FETCH_IMAGES: 'true', IMPORT_IMAGE_MAX_BYTES: String(CAP), IMPORT_IMAGE_TIMEOUT_MS: String(TIMEOUT_MS) }

/** The images' host: counts the requests of each path, and says how much of an endless body it sent. */
class ImageHost {
  readonly hits = new Map<string, number>()
  endlessSent = 0
  endlessClosed = false
  private server!: http.Server
  private readonly hanging = new Set<http.ServerResponse>()
  base = ''

  async start (): Promise<void> {
    const [pngBytes, jpegBytes] = [await png(), await sidewaysJpeg(120, 90)]
    this.server = http.createServer((req, res) => {
      const path = req.url ?? '/'
      this.hits.set(path, (this.hits.get(path) ?? 0) + 1)
      if (path === '/a.png') res.writeHead(200, { 'content-type': 'image/png' }).end(pngBytes)
      else if (path === '/cover.jpg') res.writeHead(200, { 'content-type': 'image/jpeg' }).end(jpegBytes)
      else if (path === '/hop') res.writeHead(302, { location: '/a.png' }).end()
      else if (path === '/to-private') res.writeHead(302, { location: 'http://10.20.30.40/a.png' }).end()
      else if (path === '/page.html') res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>not an image</body></html>')
      else if (path === '/fake.png') res.writeHead(200, { 'content-type': 'image/png' }).end('<html>not a png</html>')
      else if (path === '/hang') this.hanging.add(res)
      else if (path === '/declared-1gb.png') {
        // Declares a gigabyte, sends a little and then nothing: it must be refused by its header.
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(1024 ** 3) })
        res.write(pngBytes.subarray(0, 100))
        this.hanging.add(res)
      } else if (path === '/endless.png') {
        res.writeHead(200, { 'content-type': 'image/png' })
        const chunk = Buffer.alloc(16 * 1024, 1)
        res.on('close', () => { this.endlessClosed = true })
        const pump = () => {
          while (!res.destroyed && this.endlessSent < 1024 ** 3) {
            this.endlessSent += chunk.length
            if (!res.write(chunk)) return res.once('drain', pump)
          }
        }
        pump()
      } else res.writeHead(404).end()
    })
    await new Promise<void>(resolve => this.server.listen(0, '127.0.0.1', resolve))
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }

  async stop (): Promise<void> {
    for (const res of this.hanging) res.destroy()
    this.server.closeAllConnections()
    await new Promise(resolve => this.server.close(resolve))
  }
}

const thumbnail = (id: number) => `<wp:postmeta><wp:meta_key>_thumbnail_id</wp:meta_key><wp:meta_value>${id}</wp:meta_value></wp:postmeta>`
const attachment = (id: number, url: string) => `<title>att ${id}</title><wp:post_id>${id}</wp:post_id><wp:post_type>attachment</wp:post_type><wp:attachment_url>${url}</wp:attachment_url>`

for (const kind of await storeKinds()) {
  describe(`POST /imports with IMPORT_FETCH_IMAGES=true [${kind}]`, () => {
    const host = new ImageHost()
    let t: TestApp
    let admin: Headers
    before(async () => {
      await host.start()
      t = await buildTestApp(kind, { ...FETCHING, WEBHOOK_ALLOW_LOOPBACK: 'true' })
      admin = await t.auth('root', ['admin'])
    })
    after(async () => {
      await host.stop()
    })

    it('fetches content and feature images into media, each URL once, and points the posts at them', async () => {
      const a = `${host.base}/a.png`
      const file = wxr([
        // The feature image's attachment comes after its post, as WordPress often writes them.
        wxrPost(1, 'With images', `<p>One <img src="${a}" alt="A blue one"> and again <img src='${a}'></p>`, thumbnail(900)),
        wxrPost(2, 'Same image', `<p><img class="x" src="${a.replace('/a.png', '/a.png')}" /></p><p><img src="${host.base}/hop"></p>`),
        attachment(900, `${host.base}/cover.jpg`),
      ])
      const job = await importFile(t, Buffer.from(file), XML, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.deepEqual(job.report.posts, { created: 2, updated: 0, unchanged: 0, skipped: 1 })
      assert.deepEqual(job.report.warnings, [])
      // a.png, cover.jpg, and /hop (a redirect to a.png: another URL, the same bytes, the same media).
      assert.deepEqual(job.report.media, { imported: 3, failed: 0 })
      assert.equal(host.hits.get('/a.png'), 2, 'a.png once by its URL, once through /hop')
      assert.equal(host.hits.get('/cover.jpg'), 1)

      const [one, two] = await allPosts(t, admin)
      const ids = [...one.content.matchAll(/\/media\/([A-Za-z0-9_-]{22})\/image/g)].map((m: RegExpMatchArray) => m[1])
      assert.equal(ids.length, 2)
      assert.equal(ids[0], ids[1])
      assert.doesNotMatch(one.content, /127\.0\.0\.1/)
      assert.match(one.content, /!\[A blue one\]\(\/media\/[A-Za-z0-9_-]{22}\/image\)/)
      // Rendered as any image of this service: its variants in srcset.
      assert.match(one.content_html, /<img src="[^"]*\/media\/[A-Za-z0-9_-]{22}\/image\?w=\d+" srcset="[^"]+ \d+w"/)
      assert.equal(typeof one.feature_image?.id, 'string')
      assert.notEqual(one.feature_image.id, ids[0])
      assert.match(one.feature_image.srcset, /\d+w/)
      const twoIds = [...two.content.matchAll(/\/media\/([A-Za-z0-9_-]{22})\/image/g)].map((m: RegExpMatchArray) => m[1])
      assert.deepEqual(twoIds, [ids[0], ids[0]], 'the same bytes by another URL: the same media')

      const media = json(await t.request({ method: 'GET', url: `/media/${ids[0]}`, headers: admin }))
      assert.equal(media.author, 'root')
      assert.equal(media.filename, 'a.png')
      const cover = json(await t.request({ method: 'GET', url: `/media/${one.feature_image.id}`, headers: admin }))
      assert.equal(cover.width, 90, 'stripped and turned upright as an upload is (EXIF orientation 6)')
      const file2 = await t.request({ method: 'GET', url: `/media/${one.feature_image.id}/file` })
      assert.equal(file2.statusCode, 200)

      // Again: fetched again (another run), the same media found by its bytes; nothing changes.
      const before = json(await t.request({ method: 'GET', url: '/media?limit=100', headers: admin })).length
      const again = await importFile(t, Buffer.from(file), XML, admin)
      assert.deepEqual(again.report.posts, { created: 0, updated: 0, unchanged: 2, skipped: 1 })
      assert.equal(json(await t.request({ method: 'GET', url: '/media?limit=100', headers: admin })).length, before)
    })

    it('fetches a Ghost post\'s feature_image and the images of its HTML', async () => {
      const file = JSON.stringify({
        db: [{
          meta: { exported_on: 1700000000000, version: '5.2.0' },
          data: {
            posts: [{ id: 'g1', title: 'Ghostly', slug: 'ghostly', html: `<figure><img src="${host.base}/a.png" alt="a"></figure>`, feature_image: `${host.base}/cover.jpg`, status: 'published', type: 'post', published_at: '2022-02-03T04:05:06.000Z' }],
          },
        }],
      })
      const job = await importFile(t, Buffer.from(file), 'application/json', admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.deepEqual(job.report.media, { imported: 2, failed: 0 })
      const post = (await allPosts(t, admin)).find(p => p.title === 'Ghostly')
      assert.match(post.content, /!\[a\]\(\/media\/[A-Za-z0-9_-]{22}\/image\)/)
      assert.equal(typeof post.feature_image.id, 'string')
    })

    it('warns for each image it cannot have, keeps its URL, and imports every post', async () => {
      const hits = (p: string) => host.hits.get(p) ?? 0
      const urls = {
        private: 'http://10.20.30.40/a.png',
        redirect: `${host.base}/to-private`,
        hang: `${host.base}/hang`,
        declared: `${host.base}/declared-1gb.png`,
        endless: `${host.base}/endless.png`,
        html: `${host.base}/page.html`,
        fake: `${host.base}/fake.png`,
        missing: `${host.base}/missing.png`,
        relative: '/wp-content/uploads/local.png',
      }
      const items = Object.entries(urls).map(([name, url], i) => wxrPost(100 + i, `Bad ${name}`, `<p>Image: <img src="${url}"></p>`))
      const job = await importFile(t, Buffer.from(wxr(items)), XML, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.equal(job.report.posts.created, items.length)
      assert.deepEqual(job.report.media, { imported: 0, failed: items.length - 1 })
      const warning = (name: string) => job.report.warnings.find((w: any) => w.item.includes(`Bad ${name}`))?.message ?? ''
      assert.match(warning('private'), /10\.20\.30\.40 is a private address/)
      assert.match(warning('redirect'), /10\.20\.30\.40 is a private address/)
      assert.match(warning('hang'), new RegExp(`no answer within ${TIMEOUT_MS} ms`))
      assert.match(warning('declared'), /1073741824 bytes, more than the 50000/)
      assert.match(warning('endless'), /larger than 50000 bytes/)
      assert.match(warning('html'), /not an image: the host sent text\/html/)
      assert.match(warning('fake'), /could not be fetched \(The file is .*judged by the bytes\.\)/, 'its bytes judged as an upload\'s are')
      assert.match(warning('missing'), /answered 404/)
      assert.match(warning('relative'), /not an absolute http\(s\) URL/)
      assert.equal(hits('/to-private'), 1)
      // The endless body was cut soon after the cap, not read to its end (a gigabyte).
      assert.ok(host.endlessClosed)
      assert.ok(host.endlessSent < 64 * 1024 * 1024, `${host.endlessSent} bytes sent`)
      for (const p of await allPosts(t, admin)) {
        const name = /^Bad (\w+)$/.exec(p.title)?.[1]
        if (name !== undefined) assert.ok(p.content.includes(urls[name as keyof typeof urls]), `${name} keeps its URL`)
      }
    })

    it('fetches nothing in a dry run', async () => {
      const before = host.hits.get('/cover.jpg') ?? 0
      const job = await importFile(t, Buffer.from(wxr([wxrPost(300, 'Dry', `<img src="${host.base}/cover.jpg">`)])), XML, admin, '?dry_run=true')
      assert.equal(job.status, 'succeeded', job.failure)
      assert.deepEqual(job.report.media, { imported: 0, failed: 0 })
      assert.equal(host.hits.get('/cover.jpg') ?? 0, before)
    })
  })

  describe(`POST /imports with IMPORT_FETCH_IMAGES=true, loopback not allowed [${kind}]`, () => {
    const host = new ImageHost()
    let t: TestApp
    let admin: Headers
    before(async () => {
      await host.start()
      t = await buildTestApp(kind, FETCHING)
      admin = await t.auth('root', ['admin'])
    })
    after(async () => {
      await host.stop()
    })

    it('refuses loopback addresses, by IP and by a name resolving to one: a warning each, no request made', async () => {
      const port = new URL(host.base).port
      const file = wxr([
        wxrPost(1, 'By IP', `<img src="${host.base}/a.png">`),
        wxrPost(2, 'By name', `<img src="http://localhost:${port}/cover.jpg">`),
      ])
      const job = await importFile(t, Buffer.from(file), XML, admin)
      assert.equal(job.status, 'succeeded', job.failure)
      assert.equal(job.report.posts.created, 2)
      assert.deepEqual(job.report.media, { imported: 0, failed: 2 })
      assert.match(job.report.warnings.find((w: any) => w.item.includes('By IP')).message, /127\.0\.0\.1 is a loopback address/)
      assert.match(job.report.warnings.find((w: any) => w.item.includes('By name')).message, /localhost resolves to (127\.0\.0\.1|::1), a loopback address/)
      assert.equal(host.hits.size, 0)
    })
  })
}
