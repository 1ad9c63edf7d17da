import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { json } from '../helper.ts'
import { editorMissing, type EditorWorld, foreign, seriousViolations, signIn, startEditorWorld } from './browser.ts'
import { before } from '../support/hooks.ts'

describe('the editor\'s SEO fields and preview links, in Chromium', { skip: editorMissing() }, () => {
  let w: EditorWorld
  let key: string
  let writer: Record<string, string>
  before(async () => {
    w = await startEditorWorld('sqlite')
    key = await w.t.apiKey('reviewer', ['posts:write'])
    writer = { authorization: `Bearer ${key}` }
  })

  it('saves the SEO fields, makes a preview link that opens without a credential, and revokes it', async () => {
    const post = json(await w.t.request({ method: 'POST', url: '/posts', headers: writer, payload: { title: 'Under review', content: 'Draft *text*.', status: 'draft' } }))
    const { page, context, requests, errors } = await w.open()
    await signIn(page, key)
    await page.getByRole('link', { name: 'Under review' }).click()
    await page.getByRole('textbox', { name: 'Content' }).filter({ hasText: 'Draft *text*.' }).waitFor()
    await page.getByLabel('Meta title', { exact: true }).fill('Under review, for search engines')
    await page.getByLabel('Meta description', { exact: true }).fill('What the post is about.')
    await page.getByLabel('Canonical URL', { exact: true }).fill('https://example.com/under-review')
    await page.keyboard.press('Control+s')
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    const saved = json(await w.t.request({ method: 'GET', url: `/posts/${post.id}`, headers: writer }))
    assert.deepEqual([saved.meta_title, saved.meta_description, saved.canonical_url], ['Under review, for search engines', 'What the post is about.', 'https://example.com/under-review'])

    await page.getByRole('button', { name: 'Preview link' }).click()
    const field = page.getByRole('textbox', { name: 'Preview URL' })
    await page.getByRole('button', { name: /^Revoke the preview link/ }).waitFor()
    const url = await field.inputValue()
    assert.match(url, new RegExp(`^${w.origin}/preview/[A-Za-z0-9_-]{20,}$`))
    assert.equal(await field.getAttribute('readonly'), '')
    assert.deepEqual(await seriousViolations(page, errors), [], 'axe: the editor with its preview links')

    // Another browser, never signed in: the link alone shows the draft.
    const stranger = await w.browser.newContext()
    const other = await stranger.newPage()
    const res = await other.goto(url)
    assert.equal(res?.status(), 200)
    assert.equal(JSON.parse(await res!.text()).title, 'Under review')
    assert.equal(res?.headers()['x-robots-tag'], 'noindex, nofollow')

    await page.getByRole('button', { name: /^Revoke the preview link/ }).click()
    await page.getByRole('status').filter({ hasText: 'Preview link revoked' }).waitFor()
    assert.equal((await other.goto(url))?.status(), 404)
    await stranger.close()

    assert.deepEqual(foreign(requests, w.origin), [])
    assert.deepEqual(errors.filter(e => !e.includes('status of 404')), [])
    await context.close()
  })
})
