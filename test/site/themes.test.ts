import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { pino } from 'pino'
import { ConfigError } from '../../src/config.ts'
import { Theme } from '../../src/site/theme.ts'
import { freePort, storeKinds } from '../helper.ts'
import { processEnv, ROOT } from '../process-helper.ts'
import { buildTestSite, publish, type TestSite } from './site-helper.ts'
import { before } from '../support/hooks.ts'

function themeDir (files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-theme-'))
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true })
    fs.writeFileSync(path.join(dir, name), text)
  }
  return dir
}

describe('a theme that does not parse', () => {
  it('stops the start with exit code 2 and one line naming the file, the line and why', async () => {
    const dir = themeDir({ 'post.liquid': '{% layout "layout" %}\n{% block content %}\n{% if %}\n{% endblock %}' })
    const data = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-theme-data-'))
    try {
      const env = { ...process.env, ...processEnv({ url: `sqlite:${path.join(data, 'blog.db')}`, dataDir: data }, { PORT: String(await freePort()), SITE_PORT: String(await freePort()), SITE_THEME_DIR: dir, MIGRATE_ON_START: 'true' }) }
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/cli/main.ts'), 'serve'], { env, stdio: ['ignore', 'ignore', 'pipe'] })
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (d: string) => { stderr += d })
      const timer = setTimeout(() => { child.kill() }, 60_000)
      const status = await new Promise<number | null>(resolve => child.once('exit', code => { resolve(code) }))
      clearTimeout(timer)
      const run = { status, stderr }
      assert.equal(run.status, 2, run.stderr)
      const lines = run.stderr.trim().split('\n')
      assert.equal(lines.length, 1, run.stderr)
      assert.match(lines[0]!, /^bad setting SITE_THEME_DIR: post\.liquid:3: /)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
      fs.rmSync(data, { recursive: true, force: true })
    }
  })

  it('refuses an unknown filter when the theme is read, not when a page is asked for', () => {
    const dir = themeDir({ 'index.liquid': '{% layout "layout" %}{% block content %}\n{{ site.title | shell: "ls" }}{% endblock %}' })
    try {
      assert.throws(() => new Theme(dir), (err: unknown) => err instanceof ConfigError && /index\.liquid:2: undefined filter: shell/.test(err.message))
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it('reads the example theme (examples/theme/)', () => {
    const theme = new Theme(path.join(ROOT, 'examples/theme'))
    assert.ok(theme.assetPath('style.css') !== null)
  })

  it('refuses a folder that is not there', () => {
    assert.throws(() => new Theme('/nonexistent/theme'), ConfigError)
  })
})

for (const kind of await storeKinds()) {
  describe(`SITE_THEME_DIR (${kind})`, () => {
    let s: TestSite
    let dir: string
    const logged: Array<Record<string, unknown>> = []
    before(async () => {
      dir = themeDir({
        'index.liquid': '{% layout "layout" %}{% block content %}<h1>My own home</h1>{% for item in posts %}<p>{{ item.title }}</p>{% endfor %}<p>[{{ site.constructor }}{{ post.__proto__ }}]</p>{% endblock %}',
        'tag.liquid': '{% include "../../../../../../etc/passwd" %}',
        'search.liquid': '{% for i in (1..100000000) %}{{ i }}{% endfor %}',
        'assets/extra.txt': 'hello',
      })
      const stream = { write: (line: string) => { logged.push(JSON.parse(line) as Record<string, unknown>) } }
      s = await buildTestSite(kind, { SITE_THEME_DIR: dir }, pino({ level: 'error' }, stream))
      await publish(s.t, { title: 'Theme test', tags: ['T'] })
    })
    after(async () => {
      fs.rmSync(dir, { recursive: true, force: true })
    })

    it('overrides the default theme file by file', async () => {
      const home = await (await s.get('/')).text()
      assert.match(home, /<h1>My own home<\/h1><p>Theme test<\/p>/)
      assert.match(home, /<html lang="en">/, 'the default layout still wraps it')
      assert.match(home, /<p>\[\]<\/p>/, 'no property beyond an object\'s own')
      assert.match(await (await s.get('/theme-test')).text(), /<h1>Theme test<\/h1>/, 'the default post template')
      const txt = s.site.theme.assetPath('extra.txt')
      assert.ok(txt !== null)
      assert.equal(await (await s.get(txt)).text(), 'hello')
    })

    it('answers the built-in error page, and logs the template, line and error, for an include outside the theme', async () => {
      const res = await s.get('/tag/t')
      assert.equal(res.status, 500)
      assert.equal(res.headers.get('cache-control'), 'no-store')
      const body = await res.text()
      assert.match(body, /Something went wrong/)
      assert.doesNotMatch(body, /passwd|\/tmp|\/work|liquid/)
      const line = logged.find(l => l.template === 'tag.liquid')
      assert.ok(line, JSON.stringify(logged))
      assert.equal(line.line, 1)
      assert.match(String(line.error), /Failed to lookup/)
    })

    it('stops a huge loop (the render limits) with the built-in error page', async () => {
      const started = Date.now()
      const res = await s.get('/search?q=x')
      assert.equal(res.status, 500)
      assert.ok(Date.now() - started < 10_000)
      assert.ok(logged.some(l => l.template === 'search.liquid'))
    })
  })
}
