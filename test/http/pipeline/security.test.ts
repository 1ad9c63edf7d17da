import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { SignJWT } from 'jose'
import { API_CSP, DOCS_CSP } from '../../../src/http/pipeline/security.ts'
import { buildTestApp, JWT_SECRET, skipOutsideCI, type TestApp } from '../../helper.ts'
import { before } from '../../support/hooks.ts'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..')
const DOCUMENT_ONLY = ['cross-origin-opener-policy', 'origin-agent-cluster', 'x-dns-prefetch-control', 'x-download-options', 'x-permitted-cross-domain-policies', 'x-xss-protection']
const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find(p => fs.existsSync(p))

describe('security headers', () => {
  let t: TestApp
  before(async () => { t = await buildTestApp('sqlite') })

  it('locks a JSON answer down: no scripts, no framing, no sniffing, no referrer', async () => {
    for (const url of ['/posts', '/nowhere', '/posts/abc']) {
      const res = await t.app.inject({ method: 'GET', url })
      assert.equal(res.headers['content-security-policy'], API_CSP, url)
      assert.match(API_CSP, /default-src 'none'/)
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.equal(res.headers['x-frame-options'], 'DENY')
      assert.equal(res.headers['referrer-policy'], 'no-referrer')
      assert.equal(res.headers['cross-origin-resource-policy'], 'same-origin')
      assert.equal(res.headers['x-powered-by'], undefined)
      assert.match(String(res.headers['strict-transport-security']), /^max-age=\d+/)
      // Headers for HTML documents and old browsers stay on the HTML pages (below).
      for (const name of DOCUMENT_ONLY) assert.equal(res.headers[name], undefined, `${url} ${name}`)
    }
  })

  it('gives the HTML pages, /docs and /admin, the headers that govern documents too', async () => {
    for (const url of ['/docs', '/admin']) {
      const res = await t.app.inject({ method: 'GET', url })
      for (const name of DOCUMENT_ONLY) assert.notEqual(res.headers[name], undefined, `${url} ${name}`)
      assert.equal(res.headers['x-frame-options'], 'DENY')
    }
  })

  it('lets /docs load its own scripts and styles, and nothing from elsewhere', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs' })
    assert.equal(res.statusCode, 200)
    assert.equal(res.headers['content-security-policy'], DOCS_CSP)
    assert.match(DOCS_CSP, /script-src 'self'(;|$)/)
    // Every script of the page is a local file: 'self' covers them, and no inline script needs a hash.
    const scripts = [...res.body.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
    assert.ok(scripts.length > 0)
    for (const [, attrs, content] of scripts) {
      assert.match(attrs!, /src="(\.\/|\/docs\/)/)
      assert.equal(content!.trim(), '')
    }
    for (const [, src] of res.body.matchAll(/(?:src|href)="([^"]+)"/g)) {
      const asset = await t.app.inject({ method: 'GET', url: new URL(src!, 'http://x/docs/').pathname })
      assert.equal(asset.statusCode, 200, src)
    }
  })

  it('renders /docs in a browser without a CSP violation', { skip: skipOutsideCI(CHROMIUM === undefined ? 'no Chromium is installed (sh scripts/install-browser.sh)' : false) }, async () => {
    const { chromium } = await import('playwright-core')
    await t.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = t.app.server.address() as net.AddressInfo
    const browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--no-sandbox'] })
    try {
      const page = await browser.newPage()
      const violations: string[] = []
      page.on('console', m => { if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text()) })
      await page.goto(`http://127.0.0.1:${port}/docs`)
      await page.waitForSelector('.swagger-ui .info .title', { timeout: 20_000 })
      assert.match(await page.textContent('.swagger-ui .info .title') ?? '', /Blog Post Service/)
      await page.waitForSelector('.opblock', { timeout: 20_000 })
      assert.deepEqual(violations, [])
    } finally {
      await browser.close()
    }
  })
})

describe('CORS', () => {
  const ORIGIN = 'https://app.example'

  describe('CORS_ORIGINS unset', () => {
    let t: TestApp
    before(async () => { t = await buildTestApp('sqlite') })

    it('sends no CORS headers at all', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/posts', headers: { origin: ORIGIN } })
      assert.equal(res.statusCode, 200)
      assert.equal(res.headers['access-control-allow-origin'], undefined)
      const pre = await t.app.inject({ method: 'OPTIONS', url: '/posts', headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } })
      assert.equal(pre.headers['access-control-allow-origin'], undefined)
      assert.equal(pre.headers['access-control-allow-methods'], undefined)
    })

    it('still answers OPTIONS with 204 and Allow', async () => {
      const res = await t.app.inject({ method: 'OPTIONS', url: '/posts' })
      assert.equal(res.statusCode, 204)
      assert.equal(res.headers.allow, 'GET, HEAD, OPTIONS, POST')
    })
  })

  describe('CORS_ORIGINS=*', () => {
    let t: TestApp
    before(async () => { t = await buildTestApp('sqlite', { CORS_ORIGINS: '*' }) })

    it('lets any origin read answers, and the headers a client needs', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/posts', headers: { origin: ORIGIN } })
      assert.equal(res.headers['access-control-allow-origin'], '*')
      assert.equal(res.headers['access-control-allow-credentials'], undefined, 'never credentialed')
      for (const h of ['Location', 'ETag', 'Link', 'Retry-After', 'X-Request-Id']) {
        assert.match(String(res.headers['access-control-expose-headers']), new RegExp(`\\b${h}\\b`))
      }
      assert.equal(res.headers['cross-origin-resource-policy'], 'cross-origin')
    })

    it('answers a preflight with the methods and the asked-for headers', async () => {
      const res = await t.app.inject({
        method: 'OPTIONS',
        url: '/posts/1',
        headers: { origin: ORIGIN, 'access-control-request-method': 'PUT', 'access-control-request-headers': 'authorization, content-type, if-match' },
      })
      assert.equal(res.statusCode, 204)
      assert.equal(res.headers['access-control-allow-origin'], '*')
      assert.match(String(res.headers['access-control-allow-methods']), /\bPUT\b.*\bDELETE\b|\bDELETE\b.*\bPUT\b/)
      assert.equal(res.headers['access-control-allow-headers'], 'authorization, content-type, if-match')
      assert.equal(res.headers['access-control-max-age'], '600')
    })

    it('answers an OPTIONS that is not a preflight with 204 and Allow, as without CORS', async () => {
      for (const headers of [{}, { origin: ORIGIN }]) {
        const res = await t.app.inject({ method: 'OPTIONS', url: '/posts/1', headers })
        assert.equal(res.statusCode, 204)
        assert.match(String(res.headers.allow), /DELETE.*GET.*PUT/)
      }
      assert.equal((await t.app.inject({ method: 'OPTIONS', url: '/v2/posts' })).headers.allow, 'GET, HEAD, OPTIONS, POST')
      assert.equal((await t.app.inject({ method: 'OPTIONS', url: '/nowhere' })).statusCode, 404)
    })

    it('puts CORS headers on errors too, so a browser can read them', async () => {
      const res = await t.app.inject({ method: 'POST', url: '/posts', headers: { origin: ORIGIN }, payload: {} })
      assert.equal(res.statusCode, 401)
      assert.equal(res.headers['access-control-allow-origin'], '*')
    })
  })

  describe('CORS_ORIGINS as a list', () => {
    let t: TestApp
    before(async () => { t = await buildTestApp('sqlite', { CORS_ORIGINS: `${ORIGIN}, https://admin.example` }) })

    it('echoes a listed origin, with Vary: Origin', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/posts', headers: { origin: 'https://admin.example' } })
      assert.equal(res.headers['access-control-allow-origin'], 'https://admin.example')
      assert.match(String(res.headers.vary), /\bOrigin\b/)
    })

    it('gives an unlisted origin no CORS headers, and its preflight no permission', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/posts', headers: { origin: 'https://evil.example' } })
      assert.equal(res.headers['access-control-allow-origin'], undefined)
      assert.match(String(res.headers.vary), /\bOrigin\b/)
      const pre = await t.app.inject({ method: 'OPTIONS', url: '/posts', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } })
      assert.equal(pre.headers['access-control-allow-origin'], undefined)
      assert.equal(pre.headers['access-control-allow-methods'], undefined)
    })

    it('answers a listed origin\'s preflight', async () => {
      const pre = await t.app.inject({ method: 'OPTIONS', url: '/posts', headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } })
      assert.equal(pre.statusCode, 204)
      assert.equal(pre.headers['access-control-allow-origin'], ORIGIN)
      assert.match(String(pre.headers['access-control-allow-methods']), /\bPOST\b/)
    })
  })
})

describe('logs', () => {
  it('never hold a token, a key or the JWT secret, whatever the request', async () => {
    const secrets: string[] = []
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-log-'))
    const child = spawn(process.execPath, [path.join(ROOT, 'bin/blog.js'), 'serve'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, DATA_DIR: dir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'trace', AUTH_JWT_SECRET: JWT_SECRET },
    })
    let out = ''
    child.stdout.on('data', c => { out += String(c) })
    child.stderr.on('data', c => { out += String(c) })
    try {
      const base = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 30_000)
        child.stdout.on('data', () => {
          const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
          if (m) {
            clearTimeout(timer)
            resolve(m[1]!)
          }
        })
      })
      const valid = await new SignJWT({ scope: 'posts:write' }).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setExpirationTime('1h').sign(new TextEncoder().encode(JWT_SECRET))
      const expired = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setExpirationTime(Math.floor(Date.now() / 1000) - 3600).sign(new TextEncoder().encode(JWT_SECRET))
      const forged = valid.slice(0, -4) + 'AAAA'
      const apiKey = `blog_${'ab'.repeat(8)}_${'Z'.repeat(43)}`
      secrets.push(valid, expired, forged, apiKey, JWT_SECRET, valid.split('.')[2]!)
      const post = async (token: string) => await fetch(`${base}/posts`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"title":"t","content":""}' })
      assert.equal((await post(valid)).status, 201)
      for (const token of [expired, forged, apiKey]) assert.equal((await post(token)).status, 401)
      assert.equal((await fetch(`${base}/posts`, { headers: { authorization: `Basic ${Buffer.from(`u:${JWT_SECRET}`).toString('base64')}` } })).status, 401)
      // Node hands the raw bytes of a refused request (Authorization included) to the client-error handler.
      await new Promise<void>(resolve => {
        const url = new URL(base)
        const socket = net.connect(Number(url.port), url.hostname, () => {
          socket.write(`GET /posts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${valid}\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`)
        })
        socket.on('data', () => {})
        socket.on('close', () => resolve())
        socket.on('error', () => resolve())
      })
      assert.equal((await fetch(`${base}/healthz`)).status, 200)
    } finally {
      await new Promise(resolve => {
        child.once('exit', resolve)
        child.kill('SIGTERM')
      })
      fs.rmSync(dir, { recursive: true, force: true })
    }
    assert.match(out, /"status":401/, 'the requests were logged')
    assert.match(out, /client error/, 'the refused request was logged')
    for (const line of out.split('\n')) {
      assert.doesNotMatch(line, /blog_abab/, 'an API key reached the log')
      assert.doesNotMatch(line, /eyJ[A-Za-z0-9_-]{10,}/, `a JWT reached the log: ${line.slice(0, 200)}`)
      for (const secret of secrets) assert.ok(!line.includes(secret), `a secret reached the log: ${line.slice(0, 200)}`)
    }
  })
})
