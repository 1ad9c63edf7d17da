import assert from 'node:assert/strict'
import fs from 'node:fs'
import { describe, it } from 'node:test'
import type { Page } from 'playwright-core'
import { json } from '../helper.ts'
import { cspViolations, editorMissing, eventually, type EditorWorld, foreign, gzippedAssets, seriousViolations, signIn, startEditorWorld, useKey, type Watched } from './browser.ts'
import { before } from '../support/hooks.ts'

const skip = editorMissing()

/** `YYYY-MM-DDTHH:mm:ss` in the browser's time zone (the test's: both run on this machine), as a datetime-local field takes it. */
function localInput (d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0')
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`
}

const content = (page: Page) => page.getByRole('textbox', { name: 'Content' })
const field = (page: Page, name: string) => page.getByLabel(name, { exact: true })
const posts = (page: Page) => page.getByRole('main').getByRole('listitem').getByRole('link')
/** Call before an action that saves; the function it gives resolves once the service took the save and the status says so. */
function nextSave (page: Page): () => Promise<void> {
  const answer = page.waitForResponse(r => ['PUT', 'POST'].includes(r.request().method()) && /^\/posts(\/\d+)?$/.test(new URL(r.url()).pathname) && r.status() < 300)
  return async () => {
    await answer
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
  }
}

describe('the editor at /admin, in Chromium', { skip }, () => {
  let w: EditorWorld
  let key: string
  let writer: Record<string, string>
  let tab: Watched
  before(async () => {
    w = await startEditorWorld('sqlite')
    key = await w.t.apiKey('writer', ['posts:write'])
    writer = { authorization: `Bearer ${key}` }
    tab = await w.open()
  })

  const api = async (method: string, url: string, payload?: object, headers: Record<string, string> = {}) =>
    await w.t.request({ method: method as 'GET', url, headers: { ...writer, ...headers }, ...(payload === undefined ? {} : { payload }) })

  let id = 0

  it('signs in with an API key and lists posts: search, status and tag filters, cursor paging', async () => {
    for (let i = 1; i <= 23; i++) {
      await api('POST', '/posts', { title: `Seeded ${String(i).padStart(2, '0')}`, content: 'x', status: i % 2 === 0 ? 'draft' : 'published', tags: i % 3 === 0 ? ['three'] : [] })
    }
    const { page } = tab
    await page.goto('/admin')
    await useKey(page)
    await page.getByLabel('API key').fill('blog_not-a-key')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByRole('alert').filter({ hasText: 'That key was not accepted' }).waitFor()
    assert.equal(await page.evaluate('sessionStorage.length'), 0, 'a refused key is not kept')
    await signIn(page, key)
    assert.equal(await page.evaluate('Object.keys(sessionStorage).filter(k => k.endsWith("token")).length'), 1, 'the key is kept in the tab\'s sessionStorage')
    await page.getByRole('link', { name: 'Seeded 23' }).waitFor()
    assert.equal(await page.getByRole('list').filter({ has: page.getByRole('link', { name: 'Seeded' }) }).getByRole('link').count(), 20)
    await page.getByRole('button', { name: 'Next page' }).click()
    await page.getByRole('link', { name: 'Seeded 01' }).waitFor()
    assert.equal(await page.getByRole('link', { name: /^Seeded/ }).count(), 3)
    await page.getByRole('button', { name: 'Previous page' }).click()
    await page.getByRole('link', { name: 'Seeded 23' }).waitFor()

    await page.getByRole('searchbox', { name: 'Search posts' }).fill('Seeded 07')
    await page.getByRole('link', { name: /^Seeded/ }).filter({ hasText: 'Seeded 07' }).waitFor()
    await eventually(async () => await posts(page).count() === 1, '1 posts listed')
    await page.getByRole('searchbox', { name: 'Search posts' }).fill('')
    await page.getByLabel('Filter by status').selectOption('draft')
    await eventually(async () => await posts(page).count() === 11, '11 posts listed')
    await page.getByLabel('Filter by tag').fill('three')
    await eventually(async () => await posts(page).count() === 3, '3 posts listed')
    assert.deepEqual(await page.getByRole('link', { name: /^Seeded/ }).allTextContents(), ['Seeded 18', 'Seeded 12', 'Seeded 06'])
    await page.getByLabel('Filter by status').selectOption('')
    await page.getByLabel('Filter by tag').fill('')
    await eventually(async () => await posts(page).count() === 20, '20 posts listed')

    assert.deepEqual(await seriousViolations(page, tab.errors), [], 'axe: the list')
  })

  it('writes a post: heading, list and bold in the preview, tags ended by comma and Enter, saved with Ctrl+S', async () => {
    const { page } = tab
    await page.getByRole('button', { name: 'New post' }).click()
    // The service's 422 lands on the field it concerns.
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await page.getByRole('alert').filter({ hasText: 'Not saved' }).waitFor()
    assert.equal(await field(page, 'Title').getAttribute('aria-invalid'), 'true')
    assert.equal(await page.evaluate('document.activeElement === document.querySelector("[aria-invalid]")'), true, 'the field in error has the focus')
    await field(page, 'Title').fill('Written in the browser')
    await content(page).click()
    await page.keyboard.insertText('# A heading\n\n- first\n- second\n\nSome **bold** text.')
    const preview = page.getByRole('region', { name: 'Preview' })
    await preview.getByRole('heading', { level: 1, name: 'A heading' }).waitFor()
    await preview.getByRole('listitem').filter({ hasText: 'second' }).waitFor()
    assert.equal(await preview.locator('strong').textContent(), 'bold')

    const tags = field(page, 'Tags')
    await tags.fill('th')
    await eventually(async () => await page.locator('datalist option[value="three"]').count() === 1, 'the tag in use is suggested')
    await tags.fill('travel')
    await tags.press(',')
    await tags.fill('Food')
    await tags.press('Enter')
    await tags.fill('later')
    await tags.press('Tab')
    assert.equal(await page.getByRole('button', { name: /^Remove tag/ }).count(), 3)

    await content(page).click()
    const done = nextSave(page)
    await page.keyboard.press('Control+s')
    await done()
    await page.waitForURL(/#\/posts\/\d+$/)
    id = Number(/#\/posts\/(\d+)$/.exec(page.url())![1])
    const post = json(await api('GET', `/posts/${id}`))
    assert.equal(post.title, 'Written in the browser')
    assert.equal(post.content, '# A heading\n\n- first\n- second\n\nSome **bold** text.')
    assert.deepEqual(post.tags, ['travel', 'Food', 'later'])
    assert.equal(post.status, 'draft')
    assert.equal(await preview.innerHTML(), post.content_html, 'the preview is the published HTML')

    assert.deepEqual(await seriousViolations(page, tab.errors), [], 'axe: the editor')
  })

  it('schedules the post', async () => {
    const { page } = tab
    const at = new Date(Date.now() + 3 * 86_400_000)
    at.setMilliseconds(0)
    await field(page, 'Status').selectOption('scheduled')
    await field(page, 'Publish at').fill(localInput(at))
    const done = nextSave(page)
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await done()
    const post = json(await api('GET', `/posts/${id}`))
    assert.equal(post.status, 'scheduled')
    assert.equal(post.publish_at, at.toISOString())
  })

  it('shows revisions with a diff and restores one: the editor shows the restored values', async () => {
    const { page } = tab
    await field(page, 'Title').fill('A second title')
    await content(page).click()
    await page.keyboard.press('Control+End')
    await page.keyboard.insertText('\n\nA new paragraph.')
    await page.keyboard.press('Control+s')
    await eventually(async () => json(await api('GET', `/posts/${id}`)).title === 'A second title', 'the second title saved')
    await page.getByRole('button', { name: 'Revisions' }).click()
    await page.getByRole('button', { name: 'Show changes in revision 1' }).click()
    await page.locator('.diff ins').filter({ hasText: 'A new paragraph.' }).waitFor()
    // Text not saved yet is set aside by a restore, one press from coming back.
    await content(page).click()
    await page.keyboard.press('Control+End')
    await page.keyboard.insertText('\n\nNot saved before the restore.')
    await page.getByRole('button', { name: 'Restore revision 1', exact: true }).click()
    await page.getByRole('status').filter({ hasText: 'Restored revision 1' }).waitFor()
    await page.getByRole('button', { name: 'Put my version back' }).waitFor()
    assert.equal(await field(page, 'Title').inputValue(), 'Written in the browser')
    assert.equal(await content(page).textContent(), '# A heading- first- secondSome **bold** text.')
    const post = json(await api('GET', `/posts/${id}`))
    assert.equal(post.title, 'Written in the browser')
    assert.equal(post.status, 'draft')
    await page.getByRole('button', { name: 'Restore revision 4', exact: true }).waitFor()
  })

  it('a save over an edit made through the API opens the dialog: Keep mine saves mine, Take theirs loads theirs, no text lost', async () => {
    const { page } = tab
    const merge = async (body: object) => await w.t.request({ method: 'PATCH', url: `/posts/${id}`, headers: { ...writer, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify(body) })
    assert.equal((await merge({ title: 'Theirs, first' })).statusCode, 200)
    await content(page).click()
    await page.keyboard.press('Control+End')
    await page.keyboard.insertText('\n\nMine, first.')
    await page.keyboard.press('Control+s')
    const dialog = page.getByRole('dialog')
    await dialog.waitFor()
    assert.ok((await dialog.textContent())!.includes('Theirs, first'), 'their version is shown')
    assert.ok((await dialog.textContent())!.includes('Mine, first.'), 'mine is shown')
    assert.deepEqual(await seriousViolations(page, tab.errors), [], 'axe: the dialog')
    const done = nextSave(page)
    await dialog.getByRole('button', { name: 'Keep mine' }).click()
    await done()
    let post = json(await api('GET', `/posts/${id}`))
    assert.ok(post.content.endsWith('Mine, first.'))
    assert.equal(post.title, 'Written in the browser')

    assert.equal((await merge({ title: 'Theirs, second', content: 'Their text.' })).statusCode, 200)
    await content(page).click()
    await page.keyboard.press('Control+End')
    await page.keyboard.insertText('\n\nMine, second.')
    await page.getByRole('button', { name: 'Save', exact: true }).click()
    await dialog.waitFor()
    await dialog.getByRole('button', { name: 'Take theirs' }).click()
    await eventually(async () => await field(page, 'Title').inputValue() === 'Theirs, second', 'their title in the editor')
    assert.equal(await content(page).textContent(), 'Their text.')
    post = json(await api('GET', `/posts/${id}`))
    assert.equal(post.content, 'Their text.')
    // Mine is set aside, one press from coming back.
    await page.getByRole('button', { name: 'Put my version back' }).click()
    assert.ok((await content(page).textContent())!.endsWith('Mine, second.'))
    const again = nextSave(page)
    await page.keyboard.press('Control+s')
    await again()
    assert.ok(json(await api('GET', `/posts/${id}`)).content.endsWith('Mine, second.'))
  })

  it('keeps unsaved text across a reload of the tab, with a note', async () => {
    const { page } = tab
    await content(page).click()
    await page.keyboard.press('Control+End')
    await page.keyboard.insertText('\n\nNot saved yet.')
    await field(page, 'Title').fill('A title not saved yet')
    await page.reload()
    await page.getByText('unsaved changes, kept in this tab, are back').waitFor()
    assert.ok((await content(page).textContent())!.endsWith('Not saved yet.'))
    assert.equal(await field(page, 'Title').inputValue(), 'A title not saved yet')
    const done = nextSave(page)
    await page.keyboard.press('Control+s')
    await done()
    assert.equal(json(await api('GET', `/posts/${id}`)).title, 'A title not saved yet')
  })

  it('deletes the post after a confirmation', async () => {
    const { page } = tab
    await page.getByRole('button', { name: 'Delete', exact: true }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Delete post' }).click()
    await page.getByRole('heading', { level: 1, name: 'Posts' }).waitFor()
    assert.equal((await api('GET', `/posts/${id}`)).statusCode, 404)
  })

  it('leaves a derived excerpt empty, so that it follows the content, and keeps a written one', async () => {
    const derived = json(await api('POST', '/posts', { title: 'Derived', content: 'The first words. And more.' }))
    const written = json(await api('POST', '/posts', { title: 'Written', content: 'Body text.', excerpt: 'Chosen words.' }))
    const { page } = tab
    await page.goto(`/admin#/posts/${derived.id}`)
    await content(page).filter({ hasText: 'The first words.' }).waitFor()
    await eventually(async () => await field(page, 'Excerpt').getAttribute('placeholder') === 'The first words. And more.', 'the derived excerpt shown as the placeholder')
    assert.equal(await field(page, 'Excerpt').inputValue(), '')
    await content(page).click()
    await page.keyboard.press('Control+Home')
    await page.keyboard.insertText('New start. ')
    const done = nextSave(page)
    await page.keyboard.press('Control+s')
    await done()
    assert.equal(json(await api('GET', `/posts/${derived.id}`)).excerpt, 'New start. The first words. And more.')

    await page.goto(`/admin#/posts/${written.id}`)
    await content(page).filter({ hasText: 'Body text.' }).waitFor()
    await page.getByRole('region', { name: 'Preview' }).getByText('Body text.').waitFor()
    assert.equal(await field(page, 'Excerpt').inputValue(), 'Chosen words.')
    await field(page, 'Title').fill('Written, retitled')
    const again = nextSave(page)
    await page.keyboard.press('Control+s')
    await again()
    assert.equal(json(await api('GET', `/posts/${written.id}`)).excerpt, 'Chosen words.')
  })

  it('sent every request to the service\'s own origin, without a script error', () => {
    assert.ok(tab.requests.length > 20)
    assert.deepEqual(foreign(tab.requests, w.origin), [])
    // The browser logs every 4xx answer: the refused key's 401, the empty title's 422 and the conflicts' 412s are on purpose.
    assert.deepEqual(tab.errors.filter(e => !/status of (401 \(Unauthorized\)|412 \(Precondition Failed\)|422 \(Unprocessable (Entity|Content)\))/.test(e)), [])
  })

  it('at 375 × 812 every control is reachable by keyboard, with a visible focus, and nothing scrolls sideways', async () => {
    const long = 'Averyveryverylongwordwithoutanyspaceatallthatgoesonandonandonandonandonandon '.repeat(3)
    const post = json(await api('POST', '/posts', {
      title: 'Narrow',
      content: `# ${long}\n\n${long}\n\n| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n| ${long} | 2 | 3 | 4 | 5 | 6 |\n\n    ${long}\n`,
      tags: ['one', 'two'],
      status: 'draft',
    }))
    await api('PUT', `/posts/${post.id}`, { title: 'Narrow', content: post.content, status: 'draft' })
    const { page, context, requests } = await w.open({ width: 375, height: 812 })
    const sideways = async () => await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth') as number
    const inside = async (name: string, locator: ReturnType<Page['getByRole']>) => {
      await locator.scrollIntoViewIfNeeded()
      const box = await locator.boundingBox()
      assert.ok(box !== null && box.x >= 0 && box.x + box.width <= 375 + 0.5, `${name} lies within the 375 px: ${JSON.stringify(box)}`)
    }
    await signIn(page, key)
    assert.equal(await sideways(), 0, 'the list does not scroll sideways')
    for (const [role, name] of [['searchbox', 'Search posts'], ['button', 'New post'], ['button', 'Sign out'], ['link', 'Narrow'], ['button', 'Next page'], ['combobox', 'Filter by status']] as const) {
      await inside(name, page.getByRole(role, { name, exact: true }))
    }
    assert.deepEqual(await seriousViolations(page), [], 'axe: the list at 375 px')

    await page.getByRole('link', { name: 'Narrow', exact: true }).click()
    await content(page).filter({ hasText: 'Averyvery' }).waitFor()
    await page.getByRole('region', { name: 'Preview' }).locator('table').waitFor()
    await page.getByRole('button', { name: 'Revisions' }).click()
    await page.getByRole('button', { name: 'Restore revision 1', exact: true }).waitFor()
    assert.equal(await sideways(), 0, 'the editor does not scroll sideways')
    const controls: [Parameters<Page['getByRole']>[0], string][] = [
      ['link', 'Posts'], ['button', 'Save'], ['button', 'Revisions'], ['button', 'Preview link'], ['button', 'Delete'],
      ['textbox', 'Title'], ['textbox', 'Slug'], ['combobox', 'Status'], ['textbox', 'Publish at'], ['combobox', 'Tags'],
      ['textbox', 'Content'], ['region', 'Preview'], ['textbox', 'Excerpt'], ['button', 'Feature image'],
      ['textbox', 'Meta title'], ['textbox', 'Meta description'], ['textbox', 'Canonical URL'], ['button', 'Restore revision 1'],
    ]
    for (const [role, name] of controls) {
      const locator = name === 'Feature image' ? page.getByLabel(name, { exact: true }) : name === 'Publish at' ? page.getByLabel(name, { exact: true }) : page.getByRole(role, { name, exact: true })
      await inside(name, locator as ReturnType<Page['getByRole']>)
    }
    assert.deepEqual(await seriousViolations(page), [], 'axe: the editor at 375 px')

    // Keyboard only: Tab from the top of the page reaches every control, each with a visible focus.
    await page.getByRole('heading', { level: 1, name: 'Narrow', exact: true }).focus()
    const reached = new Set<string>()
    const unmarked: string[] = []
    for (let i = 0; i < 80; i++) {
      await page.keyboard.press('Tab')
      // CodeMirror marks itself focused on the next frame.
      await page.evaluate('new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)))')
      const focused = await page.evaluate(`(() => {
        let e = document.activeElement
        while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement
        if (!e || e === document.body) return null
        const name = (e.getAttribute('aria-label') || (e.labels && e.labels[0] && e.labels[0].textContent) || e.textContent || '').trim()
        const ring = e.classList.contains('cm-content') ? e.closest('.cm-editor') : e
        const style = getComputedStyle(ring)
        return { name, visible: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2 }
      })()`) as { name: string, visible: boolean } | null
      if (focused === null) continue
      reached.add(focused.name)
      if (!focused.visible) unmarked.push(focused.name)
    }
    for (const [, name] of controls) assert.ok(reached.has(name), `Tab reaches ${name} (reached: ${[...reached].join(' | ')})`)
    assert.deepEqual(unmarked, [], 'every focused control shows its focus')
    assert.deepEqual(foreign(requests, w.origin), [])
    await context.close()
  })

  it('weighs at most 300 KiB of JavaScript and CSS gzipped, and opens a post ready to edit (time printed)', async () => {
    const post = json(await api('POST', '/posts', { title: 'Timed', content: 'Ready to edit.' }))
    const { page, context, requests } = await w.open()
    // Signed in already in this tab, with nothing cached: the first load of the page, its assets and the post.
    await context.addInitScript(`sessionStorage.setItem('blog-editor.token', ${JSON.stringify(key)})`)
    const started = performance.now()
    await page.goto(`/admin#/posts/${post.id}`)
    await content(page).filter({ hasText: 'Ready to edit.' }).waitFor()
    assert.equal(await content(page).getAttribute('contenteditable'), 'true')
    const ms = performance.now() - started
    process.stdout.write(`# time from navigation to an editable post: ${ms.toFixed(0)} ms\n`)
    const sizes = await gzippedAssets(page, w.origin)
    const total = [...sizes.values()].reduce((a, b) => a + b, 0)
    process.stdout.write(`# gzipped JavaScript and CSS: ${(total / 1024).toFixed(1)} KiB (${[...sizes].map(([u, n]) => `${u} ${(n / 1024).toFixed(1)} KiB`).join(', ')})\n`)
    assert.ok(sizes.size >= 2, 'the script and the style sheet were loaded')
    assert.ok(total <= 300 * 1024, `${total} bytes`)
    // What only Profile, Staff and Site need (QR codes, passkey registration, the staff's table, the site's settings) waits until they open.
    const { lazy } = JSON.parse(fs.readFileSync(new URL('../../dist/admin/manifest.json', import.meta.url), 'utf8')) as { lazy: { file: string, screen: string }[] }
    assert.deepEqual(lazy.map(l => l.screen).sort(), ['profile', 'site', 'staff'])
    assert.deepEqual([...sizes.keys()].filter(u => lazy.some(l => u.endsWith(`/${l.file}`))), [], 'no lazy screen\'s file is loaded for the list and the editor')
    assert.deepEqual(foreign(requests, w.origin), [])
    await context.close()
  })

  it('renders every screen under its own CSP with no violation, and a post opened from the list takes keys at once', async () => {
    const { page, context } = await w.open()
    const post = json(await api('POST', '/posts', { title: 'Aligned', content: '| left | right | middle |\n|:--|--:|:-:|\n| a | 1 | x |\n\n![A dot](https://images.example/dot.gif)\n\n```js\nconst a = 1\n```' }))
    await page.goto('/admin')
    await page.getByLabel('Email').waitFor()
    await useKey(page)
    await page.getByLabel('API key').waitFor()
    assert.deepEqual(await cspViolations(page), [], 'the sign-in screen')
    await signIn(page, key)
    assert.deepEqual(await cspViolations(page), [], 'the list')

    // The post's values come late (held back here): what is typed meanwhile must not be lost.
    await page.route(`**/posts/${post.id as number}`, async route => {
      await new Promise(resolve => setTimeout(resolve, 400))
      await route.fallback()
    }, { times: 1 })
    await posts(page).filter({ hasText: 'Aligned' }).click()
    await page.getByRole('status').filter({ hasText: 'Loading the post' }).waitFor()
    // As a person does: into the field as soon as it shows.
    await field(page, 'Title').click()
    await page.keyboard.press('End')
    await page.keyboard.type(', typed at once')
    assert.equal(await field(page, 'Title').inputValue(), 'Aligned, typed at once')

    const preview = page.getByRole('region', { name: 'Preview' })
    await preview.locator('th.align-right').filter({ hasText: 'right' }).waitFor()
    // The editor loads nothing from another origin: an image linked elsewhere is named, not fetched.
    await preview.getByText('[A dot: https://images.example/dot.gif, not loaded in the editor]').waitFor()
    assert.equal(await preview.locator('[style]').count(), 0)
    await page.getByRole('button', { name: 'Revisions' }).click()
    await page.getByRole('button', { name: 'Preview link' }).click()
    // A save over someone else's: the dialog.
    await w.t.request({ method: 'PATCH', url: `/posts/${post.id as number}`, headers: { ...writer, 'content-type': 'application/merge-patch+json' }, payload: JSON.stringify({ excerpt: 'Theirs.' }) })
    await page.keyboard.press('Control+s')
    await page.getByRole('dialog').waitFor()
    assert.deepEqual(await cspViolations(page), [], 'the editor, its revisions, preview link and conflict dialog')
    await context.close()
  })
})
