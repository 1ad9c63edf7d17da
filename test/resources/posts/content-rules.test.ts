import assert from 'node:assert/strict'
import { ConfigError } from '../../../src/config.ts'
import { loadConfig } from '../../../src/context.ts'
import { describe, it } from 'node:test'
import { EXCERPT_DERIVED_LENGTH } from '../../../src/resources/posts/limits.ts'
import { isSafeUrl, renderContent, shorten } from '../../../src/resources/posts/markdown.ts'
import { publishedAtAfter } from '../../../src/resources/posts/published-at.ts'
import { deriveSlug, firstFreeSlug, isSlug, SLUG_MAX, slugCandidate } from '../../../src/domain/slug.ts'
import { normaliseTags, parseTagFilter } from '../../../src/resources/posts/tags.ts'

describe('slug derivation', () => {
  it('folds Unicode to ASCII and joins words with single hyphens', () => {
    assert.equal(deriveSlug('Crème brûlée!'), 'creme-brulee')
    assert.equal(deriveSlug('  Über die Straße —  nach Košice  '), 'ueber-die-strasse-nach-kosice')
    assert.equal(deriveSlug('Привет, мир'), 'privet-mir')
    assert.equal(deriveSlug('C++ & Node.js: 10 tips'), 'c-node-js-10-tips')
  })

  it('falls back to "post" when nothing is left', () => {
    assert.equal(deriveSlug('!!!'), 'post')
    assert.equal(deriveSlug('😀😀'), 'post')
  })

  it('cuts to 100 characters without a trailing hyphen', () => {
    const slug = deriveSlug(`${'a'.repeat(99)} b c`)
    assert.equal(slug, 'a'.repeat(99))
    assert.ok(isSlug(deriveSlug('word '.repeat(100))))
    assert.ok(deriveSlug('word '.repeat(100)).length <= SLUG_MAX)
  })

  it('numbers candidates -2, -3 … within 100 characters', () => {
    assert.equal(slugCandidate('hello', 1), 'hello')
    assert.equal(slugCandidate('hello', 2), 'hello-2')
    const long = slugCandidate('x'.repeat(100), 12)
    assert.equal(long, `${'x'.repeat(97)}-12`)
    assert.ok(isSlug(long))
    assert.deepEqual(firstFreeSlug('hello', new Set(['hello', 'hello-2', 'hello-4'])), { slug: 'hello-3', n: 3 })
  })

  it('checks the slug pattern and length from both sides', () => {
    assert.ok(isSlug('a'.repeat(100)))
    assert.ok(!isSlug('a'.repeat(101)))
    for (const bad of ['', 'A', 'a--b', '-a', 'a-', 'a b', 'é']) assert.ok(!isSlug(bad), bad)
  })
})

describe('tags', () => {
  it('trims, keeps the first spelling of tags equal but for case, in the order given', () => {
    assert.deepEqual(normaliseTags([' Node ', 'node', 'TypeScript', 'NODE', 'typescript ']), ['Node', 'TypeScript'])
  })

  it('reads a ?tag= list as distinct lowercase keys', () => {
    assert.deepEqual(parseTagFilter('Node, node ,TS,,'), ['node', 'ts'])
  })
})

describe('Markdown rendering', () => {
  it('renders CommonMark with GitHub tables, strikethrough and autolinks', () => {
    const { html } = renderContent('# Title\n\n~~old~~ see https://example.com\n\n| a | b |\n|---|---|\n| 1 | 2 |\n')
    assert.match(html, /<h1>Title<\/h1>/)
    assert.match(html, /<s>old<\/s>/)
    assert.match(html, /<a href="https:\/\/example.com">https:\/\/example.com<\/a>/)
    assert.match(html, /<table>[\s\S]*<td>1<\/td>/)
  })

  it('escapes raw HTML and drops links and images with other schemes', () => {
    const { html } = renderContent([
      '<script>alert(1)</script>',
      '<img src=x onerror=alert(1)>',
      '[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](jav&#x61;script:alert(1)) [d](vbscript:x) [e](data:text/html,x)',
      '![i](javascript:alert(1)) ![j](data:image/png;base64,AAAA)',
      '<javascript:alert(1)>',
      '[ok](https://a.example/x) [mail](mailto:a@b.example) [rel](/posts/1) ![img](http://a.example/i.png)',
    ].join('\n\n'))
    assert.doesNotMatch(html, /<script|<img[^>]*onerror|href="(?:javascript|vbscript|data)|src="(?:javascript|data)/i)
    assert.match(html, /&lt;script&gt;/)
    assert.match(html, /<a href="https:\/\/a.example\/x">ok<\/a>/)
    assert.match(html, /<a href="mailto:a@b.example">mail<\/a>/)
    assert.match(html, /<a href="\/posts\/1">rel<\/a>/)
    assert.match(html, /<img src="http:\/\/a.example\/i.png" alt="img">/)
  })

  it('judges URL schemes as a browser would read them', () => {
    for (const bad of ['javascript:x', ' javascript:x', 'java\tscript:x', 'JAVASCRIPT:x', 'data:x', 'file:///etc/passwd', 'vbscript:x']) assert.ok(!isSafeUrl(bad), bad)
    for (const good of ['http://a', 'https://a', 'mailto:a@b', '/x', '#top', 'x/y', '?q=1']) assert.ok(isSafeUrl(good), good)
  })

  it('renders hostile input of 100 000 characters to bounded, safe HTML', () => {
    for (const hostile of ['>'.repeat(100_000), '['.repeat(100_000), '*'.repeat(100_000), '- '.repeat(50_000), '<'.repeat(100_000), '[a]('.repeat(25_000), '**a'.repeat(33_000), '`'.repeat(100_000), '&#x3c;script&#x3e;'.repeat(5000)]) {
      const { html, excerpt } = renderContent(hostile)
      assert.doesNotMatch(html, /<script/i)
      assert.ok(Array.from(excerpt).length <= EXCERPT_DERIVED_LENGTH + 1)
    }
  })
})

describe('excerpts', () => {
  it('is the plain text, Markdown removed and white space collapsed', () => {
    assert.equal(renderContent('# Hello *world*\n\nA [link](https://x.example)  and `code`.\n\n- one\n- two').excerpt, 'Hello world A link and code. one two')
  })

  it('keeps text up to 200 characters whole, and cuts longer at a word boundary with …', () => {
    const exact = 'a'.repeat(200)
    assert.equal(shorten(exact), exact)
    const words = 'word '.repeat(60).trim()
    const cut = shorten(words)
    assert.ok(cut.endsWith('word…'))
    assert.ok(Array.from(cut).length <= 201)
    assert.equal(shorten(`${'a'.repeat(199)} bcd`), `${'a'.repeat(199)}…`)
    assert.equal(shorten('x'.repeat(250)), `${'x'.repeat(200)}…`)
  })

  it('counts characters, not UTF-16 units', () => {
    assert.equal(shorten('😀'.repeat(200)), '😀'.repeat(200))
  })
})

describe('published_at', () => {
  const now = new Date('2026-05-01T10:00:00.000Z')
  it('is set on the first switch to published and kept through edits, unpublishing and republishing', () => {
    assert.equal(publishedAtAfter(null, 'draft', now), null)
    const first = publishedAtAfter(null, 'published', now)
    assert.equal(first, '2026-05-01T10:00:00.000Z')
    const later = new Date('2026-06-01T00:00:00.000Z')
    assert.equal(publishedAtAfter(first, 'published', later), first)
    assert.equal(publishedAtAfter(first, 'draft', later), first)
    assert.equal(publishedAtAfter(first, 'published', later), first)
  })
})

describe('PUBLIC_BASE_URL', () => {
  it('defaults to http://HOST:PORT and drops a trailing slash', () => {
    assert.equal(loadConfig({}).publicBaseUrl, 'http://127.0.0.1:3000')
    assert.equal(loadConfig({ HOST: '::1', PORT: '8080' }).publicBaseUrl, 'http://[::1]:8080')
    assert.equal(loadConfig({ PUBLIC_BASE_URL: 'https://blog.example.com/' }).publicBaseUrl, 'https://blog.example.com')
    assert.equal(loadConfig({ PUBLIC_BASE_URL: 'https://example.com/blog/' }).publicBaseUrl, 'https://example.com/blog')
  })

  it('refuses what cannot prefix a link, naming the setting', () => {
    for (const bad of ['ftp://example.com', 'not a url', 'https://example.com/?a=1', 'https://example.com/#x', 'https://user:pw@example.com']) {
      assert.throws(() => loadConfig({ PUBLIC_BASE_URL: bad }), (err: unknown) => err instanceof ConfigError && err.setting === 'PUBLIC_BASE_URL', bad)
    }
  })
})
