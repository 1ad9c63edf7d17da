import type { Post, PostSummary } from '../../domain/post.ts'
import type { ApiVersion } from '../../http/versioning.ts'

type ListedPost = PostSummary & { content?: string, contentHtml?: string }

function common (post: ListedPost) {
  return {
    title: post.title,
    content: post.content,
    status: post.status,
    created_at: post.createdAt,
    updated_at: post.updatedAt,
    author: post.author,
    slug: post.slug,
    tags: post.tags,
    excerpt: post.excerpt,
    published_at: post.publishedAt,
    content_html: post.contentHtml,
  }
}

/** The single-post representation of each version (contract §1, §8, §10). */
export function renderPost (post: Post, version: ApiVersion, base: string) {
  if (version === 1) return { id: post.id, ...common(post) }
  const self = `${base}/posts/${post.id}`
  return {
    postId: post.id,
    ...common(post),
    _links: { self: { href: self }, update: { href: self, method: 'PUT' }, delete: { href: self, method: 'DELETE' } },
  }
}

/** A post's members by field name (what a list item's `fields` choose from). */
export function postData (post: ListedPost, version: ApiVersion): Record<string, unknown> {
  return { [version === 1 ? 'id' : 'postId']: post.id, ...common(post) }
}
