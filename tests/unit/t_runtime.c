/*
 * t_runtime.c -- the runtime binding: the token hash's forms and
 * upstream's messages, the init body's rules, the binding replaced whole,
 * the environment a command gets from it, and the held-request body of
 * the OpenSandbox dialect.
 */
#include <errno.h>
#include <string.h>

#include <jansson.h>
#include <openssl/sha.h>

#include "../../execd/domain/runtime.h"
#include "../../execd/transport/dialect.h"
#include "../t.h"

#define HEX64	"9f86d081884c7d659a2feaa0c55ad015" \
		"a3bf4f1b2b0b822cd15d6c15b0f00a08"	/* SHA-256("test") */

/* The message of refusing s as a hash ("" when it is accepted). */
static const char *
hash_err(const char *s)
{
	static char err[256];
	unsigned char md[RUNTIME_MD_LEN];

	err[0] = '\0';
	if (runtime_hash_parse(s, md, err, sizeof(err)) == 0)
		return "";
	return err;
}

static void
t_hash(void)
{
	unsigned char md[RUNTIME_MD_LEN], want[RUNTIME_MD_LEN];
	char err[128];

	SHA256((const unsigned char *)"test", 4, want);
	T_EQ_INT(runtime_hash_parse(" \tsha256:" HEX64 "\n", md, err,
	    sizeof(err)), 0);
	T_OK(memcmp(md, want, sizeof(md)) == 0);
	T_EQ_STR(hash_err("sha256:9F86D081884C7D659A2FEAA0C55AD015"
	    "A3BF4F1B2B0B822CD15D6C15B0F00A08"), "");
	T_EQ_STR(hash_err(HEX64),
	    "access token hash must use sha256:<hex> format");
	T_EQ_STR(hash_err("SHA256:" HEX64),
	    "access token hash must use sha256:<hex> format");
	T_EQ_STR(hash_err(""), "access token hash must use sha256:<hex> "
	    "format");
	T_EQ_STR(hash_err("sha256:0g"), "access token hash is not valid hex: "
	    "encoding/hex: invalid byte: U+0067 'g'");
	T_EQ_STR(hash_err("sha256:abc"), "access token hash is not valid "
	    "hex: encoding/hex: odd length hex string");
	/* a bad digit is named before an odd length, as Go's decoder does */
	T_EQ_STR(hash_err("sha256:abz"), "access token hash is not valid "
	    "hex: encoding/hex: invalid byte: U+007A 'z'");
	T_EQ_STR(hash_err("sha256:"), "access token hash must be 32 hex "
	    "bytes, got 0");
	T_EQ_STR(hash_err("sha256:" HEX64 "00"), "access token hash must "
	    "be 32 hex bytes, got 33");
	T_EQ_STR(hash_err("sha256: " HEX64), "access token hash is not valid "
	    "hex: encoding/hex: invalid byte: U+0020 ' '");
}

/* The message of refusing body ("" when it is accepted). */
static const char *
req_err(const char *body)
{
	static char err[512];
	struct runtime_req r;

	err[0] = '\0';
	if (runtime_req_parse(body, strlen(body), &r, err, sizeof(err)) < 0)
		return err;
	runtime_req_reset(&r);
	return "";
}

static void
t_req(void)
{
	struct runtime_req r;
	const char *b = "{\"sandboxId\":\" sb \",\"generation\":42,"
	    "\"accessTokenHash\":\"sha256:" HEX64 "\",\"envs\":{\"A\":\"1\"},"
	    "\"telemetry\":{\"attributes\":{\"generation\":\"9\","
	    "\"team\":\"x\"}},\"preserveRuntimeState\":true,\"new\":1}";
	char err[256];

	T_EQ_INT(runtime_req_parse(b, strlen(b), &r, err, sizeof(err)), 0);
	T_EQ_STR(r.sandbox_id, "sb");
	T_EQ_INT((long long)r.generation, 42);
	T_OK(r.has_hash && r.preserve && !r.restart && r.lifecycle == NULL);
	T_EQ_STR(json_string_value(json_object_get(r.envs, "A")), "1");
	T_EQ_INT((long long)json_object_size(r.attrs), 1);
	T_EQ_INT((long long)json_array_size(r.warnings), 1);
	T_EQ_STR(json_string_value(json_array_get(r.warnings, 0)),
	    "telemetry attribute generation is reserved and was dropped");
	runtime_req_reset(&r);

	T_EQ_STR(req_err("{\"sandboxId\":\"s\",\"generation\":1,"
	    "\"entrypointPolicy\":\"keep\",\"accessTokenHash\":\"\","
	    "\"envs\":null,\"lifecycle\":{}}"), "");
	T_EQ_STR(req_err("null"), "sandboxId must not be blank");
	T_EQ_STR(req_err(""), "invalid runtime init request: EOF");
	T_EQ_STR(req_err("{\"sandboxId\":\"s\",\"generation\":true}"),
	    "invalid runtime init request: generation must be an unsigned "
	    "integer, not bool");
	T_EQ_STR(req_err("{\"sandboxId\":\"s\",\"generation\":-3}"),
	    "invalid runtime init request: generation must be an unsigned "
	    "integer, not negative");
	T_EQ_STR(req_err("{\"sandboxId\":\"s\",\"generation\":0}"),
	    "generation must be a positive integer");
	T_EQ_STR(req_err("{\"sandboxId\":\"s\",\"generation\":1,"
	    "\"envs\":{\"Jupyter_Token\":\"x\"}}"), "env key \"Jupyter_Token\" "
	    "is reserved by execd and must not be set via /internal/init");
	T_EQ_STR(req_err("{\"sandboxId\":\"s\",\"generation\":1,"
	    "\"envs\":{\"A=B\":\"x\"}}"), "env key \"A=B\": names may not "
	    "hold '=' and values may not hold NUL");
	T_EQ_STR(req_err("{\"sandboxId\":\"s\",\"generation\":1,"
	    "\"telemetry\":{\"attributes\":{\" \":\"x\"}}}"),
	    "telemetry attributes must not contain blank keys");
}

static void
t_bind_and_env(void)
{
	struct runtime_req r;
	const char *b = "{\"sandboxId\":\"one\",\"generation\":3,"
	    "\"accessTokenHash\":\"sha256:" HEX64 "\","
	    "\"envs\":{\"B\":\"bound\",\"C\":\"bound\"}}";
	char err[128];
	json_t *over, *env;

	runtime_start(true);
	T_OK(!runtime_ready() && !runtime_bound());
	T_OK(runtime_sandbox_id() == NULL && runtime_token_md() == NULL);
	over = json_pack("{s:s}", "A", "x");
	env = runtime_env_over(over);	/* nothing bound: as it was */
	T_OK(env == over && json_object_size(env) == 1);
	json_decref(env);

	T_EQ_INT(runtime_req_parse(b, strlen(b), &r, err, sizeof(err)), 0);
	runtime_bind(&r);
	T_OK(r.sandbox_id == NULL && r.envs == NULL);
	T_OK(runtime_bound() && runtime_token_md() != NULL);
	T_EQ_STR(runtime_sandbox_id(), "one");
	env = runtime_env_over(json_pack("{s:s, s:s}", "C", "file",
	    "OPENSANDBOX_ID", "mine"));
	T_EQ_STR(json_string_value(json_object_get(env, "B")), "bound");
	T_EQ_STR(json_string_value(json_object_get(env, "C")), "file");
	T_EQ_STR(json_string_value(json_object_get(env, "OPENSANDBOX_ID")),
	    "one");
	json_decref(env);

	/* replaced whole: no token, no B */
	b = "{\"sandboxId\":\"two\",\"generation\":4}";
	T_EQ_INT(runtime_req_parse(b, strlen(b), &r, err, sizeof(err)), 0);
	runtime_bind(&r);
	T_OK(runtime_token_md() == NULL);
	T_EQ_INT((long long)runtime_generation(), 4);
	env = runtime_env_over(json_object());
	T_OK(json_object_get(env, "B") == NULL);
	T_EQ_STR(json_string_value(json_object_get(env, "OPENSANDBOX_ID")),
	    "two");
	json_decref(env);
	runtime_shutdown();
	T_OK(!runtime_bound() && runtime_sandbox_id() == NULL);
}

static void
t_hold_body(void)
{
	struct buf b;

	buf_init(&b);
	dialect_hold(&dialect_opensandbox, &b);
	T_OK(b.len == strlen("{\"error\":\"execd is not initialized yet: POST "
	    "/internal/init must be called first\"}") && memcmp(b.p,
	    "{\"error\":\"execd is not initialized yet: POST /internal/init "
	    "must be called first\"}", b.len) == 0);
	buf_reset(&b);
	buf_init(&b);
	dialect_hold(&dialect_jupyter, &b);
	T_OK(b.len > 0 && memmem(b.p, b.len, "\"reason\":null", 13) != NULL);
	buf_reset(&b);
}

int
main(void)
{
	static const struct t_case cases[] = {
		{ "token hash: forms and upstream's messages", t_hash },
		{ "init body: rules, messages, dropped attributes", t_req },
		{ "binding replaced whole; a command's env from it",
		    t_bind_and_env },
		{ "held requests: upstream's body", t_hold_body },
	};

	return T_RUN(cases);
}
