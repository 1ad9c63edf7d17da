import type { Post, PostSummary } from './post.ts'
import type { Revision, RevisionSummary } from './revisions/revision.ts'
import { API_VERSIONS, type ApiVersion, idNameOf } from '../../http/protocol/versioning.ts'

type ListedPost = PostSummary & { content?: string, contentHtml?: string }

function common (post: ListedPost) {
  return {
    title: post.title,
    content: post.content,
    status: post.status,
    publish_at: post.publishAt,
    created_at: post.createdAt,
    updated_at: post.updatedAt,
    author: post.author,
    authors: post.authors,
    slug: post.slug,
    tags: post.tags,
    excerpt: post.excerpt,
    published_at: post.publishedAt,
    content_html: post.contentHtml,
    meta_title: post.metaTitle,
    meta_description: post.metaDescription,
    canonical_url: post.canonicalUrl,
    feature_image: post.featureImage,
  }
}

/** The single-post representation of each version. */
export function renderPost (post: Post, version: ApiVersion, base: string) {
  if (version === 1) return { id: post.id, ...common(post) }
  const self = `${base}/posts/${post.id}`
  return {
    postId: post.id,
    ...common(post),
    _links: { self: { href: self }, update: { href: self, method: 'PUT' }, delete: { href: self, method: 'DELETE' } },
  }
}

/** The identifier's name in each version, looked up once per row (lists render many). */
const ID_NAMES = Object.fromEntries(API_VERSIONS.map(v => [v, idNameOf(v, 'post')])) as Record<ApiVersion, string>

/** A post's members by field name (what a list item's `fields` choose from). */
export function postData (post: ListedPost, version: ApiVersion): Record<string, unknown> {
  return { [ID_NAMES[version]]: post.id, ...common(post) }
}

/** A revision's members by field name: the whole revision, or a list item's choice of them. */
export function revisionData (r: RevisionSummary & Partial<Pick<Revision, 'content' | 'tags' | 'excerpt'>>): Record<string, unknown> {
  return {
    number: r.number,
    title: r.title,
    content: r.content,
    status: r.status,
    slug: r.slug,
    tags: r.tags,
    excerpt: r.excerpt,
    publish_at: r.publishAt,
    editor: r.editor,
    created_at: r.createdAt,
    meta_title: r.metaTitle,
    meta_description: r.metaDescription,
    canonical_url: r.canonicalUrl
  }
}

export function renderRevision (r: Revision) {
  return revisionData(r)
}
