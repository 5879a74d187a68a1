/*
 * fs_glob.h -- the glob dialect of GET /files/search.
 *
 * What upstream's Go "doublestar" library accepts, tested against a
 * name (the search passes each entry's base name; '/' is a separator):
 *
 *   *		any run of characters except '/'
 *   ?		exactly one character except '/'
 *   [abc] [a-z] [!..] [^..]	one character (never '/') in or not in
 *		the class; ']' first in a class is literal; \ escapes
 *   {a,b,c}	alternation, nestable, with wildcards inside
 *   **		as a whole segment ("**", "**" "/x", "x/" "**"): zero or more
 *		segments; a pattern ending in "/" "**" also matches what is
 *		before that '/'.  Elsewhere "**" is "*".
 *   !(a|b)	any run of characters within one segment that matches
 *		neither a nor b (bash extglob); a '!' not followed by '('
 *		is malformed, "\!" is a literal '!'
 *   \c		the character c
 *
 * Characters are UTF-8: '?', a class and '*' step over one whole
 * character; a byte that does not start a valid UTF-8 sequence is one
 * character on its own.  Matching is case-sensitive.
 *
 * Malformed, whatever the name (the syntax is checked before anything is
 * matched, unlike upstream): an unclosed '[', '{' or "!(", an empty class,
 * a trailing lone '\', a bare '!', more than 4096 bytes, more than 32
 * nested groups, more than 16 "!(" groups, a "!(" inside another, or a
 * "!(" group too large (about 60 pattern characters).
 *
 * The matcher is an NFA simulated one character at a time, so its time is
 * O(len(name) * len(pattern)) whatever the pattern ("!(" adds a factor of
 * the number of distinct states its sub-pattern can be in).  Pure; it
 * allocates a little and aborts if memory runs out.  Any thread.
 */
#ifndef FS_GLOB_H
#define FS_GLOB_H

#define FS_GLOB_PAT_MAX	4096	/* longest pattern accepted, in bytes */

/* 1: name matches pat; 0: it does not; -EINVAL: pat is malformed. */
int	fs_glob_match(const char *pat, const char *name);

#endif
