import type { PostSeo, PostStatus } from '../post.ts'

/** The editor of the changes the service makes on its own (the scheduled switch). */
export const SYSTEM_EDITOR = 'system'

/** A post's values after one change. Revisions never change once recorded. */
export interface Revision extends PostSeo {
  postId: number
  /** 1, 2, 3 … per post: the post's revision the change made. */
  number: number
  title: string
  content: string
  status: PostStatus
  slug: string
  tags: string[]
  excerpt: string
  /** Whether the excerpt was the one derived from the content (a restore derives it again). */
  excerptDerived: boolean
  publishAt: string | null
  editor: string
  createdAt: string
}

/** What a list of revisions shows of each. */
export type RevisionSummary = Omit<Revision, 'content' | 'tags' | 'excerpt' | 'excerptDerived'>

export const REVISION_SORT_KEYS = ['number'] as const
