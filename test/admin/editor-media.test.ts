import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Page } from 'playwright-core'
import sharp from 'sharp'
import { json } from '../helper.ts'
import { editorMissing, type EditorWorld, eventually, foreign, seriousViolations, signIn, startEditorWorld } from './browser.ts'
import { before } from '../support/hooks.ts'

async function png (width: number, height: number, colour: string): Promise<Buffer> {
  return await sharp({ create: { width, height, channels: 3, background: colour } }).png().toBuffer()
}

/** Puts an image file on the clipboard of a paste (or the data of a drop) into the Markdown editor, as the browser would. */
async function deliver (page: Page, kind: 'paste' | 'drop', name: string, bytes: Buffer): Promise<void> {
  await page.getByRole('textbox', { name: 'Content' }).evaluate((el, arg) => {
    // The page's globals, typed loosely: the tests are compiled without the DOM's types.
    const g = globalThis as unknown as Record<string, new (...args: unknown[]) => Record<string, any>> & { atob: (s: string) => string }
    const raw = g.atob(arg.base64)
    const data = new g.DataTransfer!()
    data.items.add(new g.File!([Uint8Array.from(raw, c => c.charCodeAt(0))], arg.name, { type: 'image/png' }))
    const box = (el as unknown as { getBoundingClientRect: () => { left: number, bottom: number } }).getBoundingClientRect()
    const event = arg.kind === 'paste'
      ? new g.ClipboardEvent!('paste', { clipboardData: data, bubbles: true, cancelable: true })
      : new g.DragEvent!('drop', { dataTransfer: data, bubbles: true, cancelable: true, clientX: box.left + 5, clientY: box.bottom - 5 })
    ;(el as unknown as { dispatchEvent: (e: unknown) => void }).dispatchEvent(event)
  }, { base64: bytes.toString('base64'), name, kind })
}

describe('the editor\'s images, in Chromium', { skip: editorMissing() }, () => {
  let w: EditorWorld
  let key: string
  let writer: Record<string, string>
  before(async () => {
    w = await startEditorWorld('sqlite')
    key = await w.t.apiKey('illustrator', ['posts:write'])
    writer = { authorization: `Bearer ${key}` }
  })

  it('uploads a feature image, takes a pasted and a dropped image into the content, and saves', async () => {
    const { page, context, requests, errors } = await w.open()
    await signIn(page, key)
    await page.getByRole('button', { name: 'New post' }).click()
    await page.getByLabel('Title', { exact: true }).fill('Illustrated')
    await page.getByLabel('Feature image', { exact: true }).setInputFiles({ name: 'cover.png', mimeType: 'image/png', buffer: await png(800, 400, '#c33') })
    await page.getByRole('button', { name: 'Remove feature image' }).waitFor()

    const content = page.getByRole('textbox', { name: 'Content' })
    await content.click()
    await page.keyboard.insertText('Before the pictures.\n\n')
    await deliver(page, 'paste', 'red-bike.png', await png(640, 480, '#a11'))
    await content.filter({ hasText: '](/media/' }).waitFor()
    await deliver(page, 'drop', 'blue-sea.png', await png(320, 240, '#11a'))
    await eventually(async () => ((await content.textContent()) ?? '').split('](/media/').length === 3, 'two images in the text')
    const text = (await content.textContent()) ?? ''
    assert.match(text, /!\[red bike\]\(\/media\/[^/)]+\/file\)/)
    assert.match(text, /!\[blue sea\]\(\/media\/[^/)]+\/file\)/)
    const preview = page.getByRole('region', { name: 'Preview' })
    await eventually(async () => await preview.locator('img[srcset]').count() === 2, 'the preview shows both images with their widths')

    await page.keyboard.press('Control+s')
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor()
    const id = Number(/#\/posts\/(\d+)$/.exec(page.url())![1])
    const post = json(await w.t.request({ method: 'GET', url: `/posts/${id}`, headers: writer }))
    assert.equal(typeof post.feature_image?.id, 'string')
    assert.equal(post.feature_image.width, 800)
    assert.equal(post.content.split('](/media/').length, 3)
    assert.equal(await preview.innerHTML(), post.content_html)
    assert.deepEqual(await seriousViolations(page, errors), [], 'axe: the editor with images')
    assert.deepEqual(foreign(requests, w.origin), [])
    assert.deepEqual(errors, [])
    await context.close()
  })
})
