import type { Byline, ImageFacts } from '../../http/contract/resources.ts'
import { type ContentImages, renderContent } from './markdown.ts'
import type { NewPostWrite, Post, PostInput, PostWrite } from './post.ts'
import { publishedAtAfter } from './published-at.ts'
import { deriveSlug } from '../../domain/slug.ts'

/** What a write needs beyond its input, looked up before it is decided. */
export interface WriteFacts {
  /** The service's own images the content shows, rendered with their variants (absent: as any image). */
  readonly images?: ContentImages | undefined
  /** The facts of the feature image the input names, or null for none (undefined on replace: keep the post's). */
  readonly featureImage?: ImageFacts | null | undefined
  /** The listed authors the input names, looked up (undefined: a create's none, a replace's current ones). */
  readonly authors?: readonly Byline[] | undefined
}

function sameTags (a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i])
}

/**
 * The values every write derives, over `current` (null on create): the HTML and the derived
 * excerpt from one parse of the content, `published_at` by its one rule.
 */
function derived (input: PostInput, current: Post | null, now: Date, images: ContentImages | undefined): Omit<PostWrite, 'slug' | 'tags' | 'featureImage' | 'authors'> {
  const rendered = renderContent(input.content, images)
  // An excerpt sent back as it was derived (a GET-modify-PUT round trip, a merge patch of other
  // members) stays derived, so it follows the content.
  const excerptDerived = input.excerpt === null || (current !== null && current.excerptDerived && input.excerpt === current.excerpt)
  return {
    title: input.title,
    content: input.content,
    status: input.status,
    excerpt: excerptDerived ? rendered.excerpt : input.excerpt!,
    excerptDerived,
    contentHtml: rendered.html,
    publishedAt: publishedAtAfter(current?.publishedAt ?? null, input.status, now),
    publishAt: input.publishAt ?? null,
    metaTitle: input.metaTitle ?? null,
    metaDescription: input.metaDescription ?? null,
    canonicalUrl: input.canonicalUrl ?? null,
  }
}

/**
 * What the store writes for a new post from `input`: the derived values, and the slug given or
 * else derived from the title. The store keeps all of it as it is; for a derived slug it only
 * finds the first free number (`-2`, `-3` …) when the slug is taken.
 */
export function newPostWrite (input: PostInput, now: Date, facts: WriteFacts = {}): NewPostWrite {
  return {
    ...derived(input, null, now, facts.images),
    slug: input.slug !== undefined ? { given: input.slug } : { derived: deriveSlug(input.title) },
    tags: input.tags,
    authors: [...facts.authors ?? []],
    featureImage: facts.featureImage ?? null,
  }
}

/**
 * What the store writes for `input` over `current`: the derived values, the slug only when it
 * changes, the tags only when they change, the feature image only when the input names one.
 */
export function postWrite (input: PostInput, current: Post, now: Date, facts: WriteFacts = {}): PostWrite {
  return {
    ...derived(input, current, now, facts.images),
    slug: input.slug !== undefined && input.slug !== current.slug ? { given: input.slug } : null,
    tags: sameTags(current.tags, input.tags) ? null : input.tags,
    authors: facts.authors === undefined || facts.authors.length === 0 || sameTags(current.authors, facts.authors.map(a => a.slug)) ? null : [...facts.authors],
    ...(facts.featureImage === undefined ? {} : { featureImage: facts.featureImage }),
  }
}
