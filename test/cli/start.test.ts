import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from '../helper.ts'
import { type Instance, processEnv, ROOT, stop, token } from '../process-helper.ts'

const START = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start

/**
 * `npm start` runs one bundled file (scripts/bundle.ts) with every package but a few left out of
 * it. The rest of the suite runs the TypeScript sources, so this runs the start script's own
 * command, as `npm start` would, and goes through what the bundle could break: the native SQLite
 * addon, the validators and serializers compiled at run time, the OpenAPI document and /docs's
 * assets (packages left outside the bundle), metrics, a signed write and a conditional read.
 */
describe('npm start (the bundled build)', () => {
  let dir: string
  let server: Instance

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-start-'))
    const port = await freePort()
    const env = { ...process.env, ...processEnv({ url: `sqlite:${path.join(dir, 'blog.db')}`, dataDir: dir }), PORT: String(port), HOST: '127.0.0.1' }
    const child = spawn('sh', ['-c', `exec ${START}`], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    const output: string[] = []
    child.stdout.on('data', (d: Buffer) => output.push(d.toString()))
    child.stderr.on('data', (d: Buffer) => output.push(d.toString()))
    const exited = new Promise<number | null>(resolve => child.once('exit', code => { resolve(code) }))
    server = { name: 'start', base: `http://127.0.0.1:${port}`, child, output, exited }
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`npm start's command exited with ${child.exitCode}:\n${output.join('')}`)
      try {
        if ((await fetch(`${server.base}/readyz`)).status === 200) break
      } catch {}
      if (i > 300) {
        child.kill('SIGKILL')
        throw new Error(`npm start's command did not become ready:\n${output.join('')}`)
      }
      await sleep(100)
    }
  })

  after(async () => {
    assert.equal(await stop(server), 0, server.output.join(''))
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it('runs the bundle that npm run build made', () => {
    assert.match(START, /\sdist\/blog\.js serve$/)
    assert.ok(fs.existsSync(path.join(ROOT, 'dist/blog.js')), 'dist/blog.js is missing: npm run build makes it')
  })

  it('writes with a token and reads back with validators, a 304 and a 404 problem', async () => {
    const auth = `Bearer ${await token('starter', ['posts:write'])}`
    const created = await fetch(`${server.base}/posts`, {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Bundled', content: 'Served by dist/blog.js.' }),
    })
    assert.equal(created.status, 201, await created.clone().text())
    const post = await created.json() as { id: number, title: string }
    assert.equal(post.title, 'Bundled')

    const read = await fetch(`${server.base}/posts/${post.id}`)
    assert.equal(read.status, 200)
    const etag = read.headers.get('etag')
    assert.match(etag ?? '', /^"[^"]+"$/)
    assert.equal((await fetch(`${server.base}/posts/${post.id}`, { headers: { 'if-none-match': etag! } })).status, 304)

    const list = await fetch(`${server.base}/posts?limit=1`)
    assert.equal(list.status, 200)
    assert.deepEqual((await list.json() as { id: number }[]).map(p => p.id), [post.id])

    const missing = await fetch(`${server.base}/posts/999999`)
    assert.equal(missing.status, 404)
    assert.equal(missing.headers.get('content-type'), 'application/problem+json')
    assert.equal((await missing.json() as { code: string }).code, 'POST_NOT_FOUND')

    const invalid = await fetch(`${server.base}/posts`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: '{"title":""}' })
    assert.equal(invalid.status, 422)
  })

  it('serves the OpenAPI document, /docs and its assets, and metrics', async () => {
    const doc = await fetch(`${server.base}/openapi.json`)
    assert.equal(doc.status, 200)
    assert.match((await doc.json() as { openapi: string }).openapi, /^3\.1\./)

    const page = await fetch(`${server.base}/docs`, { redirect: 'follow' })
    assert.equal(page.status, 200)
    const html = await page.text()
    const assets = [...html.matchAll(/(?:src|href)="([^"]+\.(?:js|css))"/g)].map(m => new URL(m[1]!, `${server.base}/docs/`).href)
    assert.ok(assets.length >= 2, `no scripts or styles in /docs:\n${html.slice(0, 500)}`)
    for (const asset of assets) {
      const res = await fetch(asset)
      assert.equal(res.status, 200, asset)
      assert.ok((await res.arrayBuffer()).byteLength > 100, asset)
    }

    const metrics = await fetch(`${server.base}/metrics`)
    assert.equal(metrics.status, 200)
    assert.match(await metrics.text(), /^http_requests_total\{method="POST",route="\/posts",status="201"\} 1$/m)
  })
})
