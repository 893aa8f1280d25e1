/* The job record: the names of phases, states and objects, the placeholder
 * filling of the node launcher (every placeholder of the real launcher
 * is known), and the rule that decides how a job ended, for the agent's
 * and for a remote backend's way of calling it. */
#include <stdio.h>
#include <string.h>

#include "jobs/launcher.h"
#include "jobs/record.h"
#include "nv_test.h"

extern const char nv_launcher_node_body[];
extern const size_t nv_launcher_node_body_len;

static void test_names(void)
{
	nv_record_phase p;
	nv_record_state s;
	char key[32];

	CHECK(NV_PHASE_COUNT == 7);
	CHECK_STR(nv_record_phase_name(NV_PHASE_SUBMITTED), "submitted");
	CHECK_STR(nv_record_phase_name(NV_PHASE_OUTPUTS_PUBLISHED),
		  "outputs_published");
	CHECK_STR(nv_record_phase_name(NV_PHASE_COUNT), "");
	CHECK(nv_record_phase_find("logs_visible", &p) == 0 &&
	      p == NV_PHASE_LOGS_VISIBLE);
	CHECK(nv_record_phase_find("succeeded", &p) == -1);
	CHECK(nv_record_phase_find(NULL, &p) == -1);
	CHECK(NV_STATE_COUNT == 3);
	CHECK_STR(nv_record_state_name(NV_STATE_CANCELLED), "cancelled");
	CHECK(nv_record_state_find("failed", &s) == 0 && s == NV_STATE_FAILED);
	CHECK(nv_record_state_find("running", &s) == -1);

	CHECK_STR(nv_record_objects[0], "navette.log");
	CHECK_STR(nv_record_objects[1], "navette-log");
	CHECK_STR(nv_record_objects[2], "navette-status");
	CHECK_STR(nv_record_objects[3], "navette-run.json");
	CHECK_STR(nv_record_objects[4], "navette-checkpoint");
	CHECK(nv_record_objects[5] == NULL);
	CHECK(nv_record_key(key, sizeof(key), "p/j/", NV_RECORD_RUN_RECORD) ==
	      0);
	CHECK_STR(key, "p/j/navette-run.json");
	CHECK(nv_record_key(key, 8, "p/j/", NV_RECORD_RUN_RECORD) == -1);
	CHECK_STR(NV_RECORD_RESERVED_HINT,
		  "rename the output: navette.log, navette-run.json, "
		  "navette-status, navette-log/ and navette-checkpoint/ are "
		  "navette's, in any case");
}

static void test_fill(void)
{
	nv_buf b;
	nv_err err;

	nv_buf_init(&b, 4096);
	CHECK(nv_record_fill(&b,
			     "a @PHASE_RUNNING@ b@ @x@ @STATE_FAILED@ "
			     "%0@LOG_CHUNK_DIGITS@d @OBJECT_STATUS@@",
			     strlen("a @PHASE_RUNNING@ b@ @x@ @STATE_FAILED@ "
				    "%0@LOG_CHUNK_DIGITS@d @OBJECT_STATUS@@"),
			     &err) == 0);
	CHECK_STR(b.data, "a running b@ @x@ failed %06d navette-status@");
	nv_buf_free(&b);

	nv_buf_init(&b, 4096);
	CHECK(nv_record_fill(&b, "x @PHASE_NOPE@ y", 16, &err) == NV_EINVAL);
	CHECK(strstr(err.message, "PHASE_NOPE") != NULL);
	nv_buf_free(&b);

	/* the real launcher: every placeholder known, none left */
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	CHECK(nv_record_fill(&b, nv_launcher_node_body,
			     nv_launcher_node_body_len, &err) == 0);
	CHECK(b.data && !b.failed);
	CHECK(b.data && strstr(b.data, "@PHASE_") == NULL &&
	      strstr(b.data, "@STATE_") == NULL &&
	      strstr(b.data, "@OBJECT_") == NULL);
	CHECK(b.data && strstr(b.data, "nv_report accepted\n") != NULL);
	CHECK(b.data && strstr(b.data, "nv_publish navette-run.json ") != NULL);
	CHECK(b.data && strstr(b.data, "printf '%06d'") != NULL);
	nv_buf_free(&b);
}

static void decide(const char *text, const nv_record_verdict *v,
		   nv_record_outcome *out)
{
	nv_record_decide(text, text ? strlen(text) : 0, v, out);
}

/* The agent's way: its own outcome so far, stopped when it failed. */
static void test_decide_agent(void)
{
	nv_record_verdict v;
	nv_record_outcome o;

	memset(&v, 0, sizeof(v));
	nv_record_outcome_init(&v.said);
	v.missing_reason = "the launcher left no run record";
	v.missing_hint = "read the log";

	decide("{\"state\":\"succeeded\",\"exit_code\":0,\"failure\":null}", &v,
	       &o);
	CHECK(o.state == NV_STATE_SUCCEEDED && o.have_exit &&
	      o.exit_code == 0 && o.record_found);

	decide("{\"state\":\"failed\",\"exit_code\":3,\"failure\":{\"phase\":"
	       "\"data_ready\",\"reason\":\"no curl\",\"hint\":\"install\"}}",
	       &v, &o);
	CHECK(o.state == NV_STATE_FAILED && o.phase == NV_PHASE_DATA_READY);
	CHECK_STR(o.reason, "no curl");
	CHECK_STR(o.hint, "install");
	CHECK(!o.no_hint && o.have_exit && o.exit_code == 3);

	/* what a record leaves out */
	decide("{\"state\":\"cancelled\",\"failure\":{\"phase\":\"submitted\""
	       "}}",
	       &v, &o);
	CHECK(o.state == NV_STATE_CANCELLED && o.phase == NV_PHASE_RUNNING);
	CHECK_STR(o.reason, "the launcher reported a failure");
	CHECK_STR(o.hint, "");
	CHECK(!o.have_exit);
	decide("{\"state\":\"weird\"}", &v, &o);
	CHECK(o.state == NV_STATE_FAILED);
	decide("{\"exit_code\":1.5}", &v, &o);
	CHECK(o.state == NV_STATE_SUCCEEDED && !o.have_exit);

	/* none, or not an object */
	decide(NULL, &v, &o);
	CHECK(o.state == NV_STATE_FAILED &&
	      o.phase == NV_PHASE_OUTPUTS_PUBLISHED && !o.record_found);
	CHECK_STR(o.reason, "the launcher left no run record");
	CHECK_STR(o.hint, "read the log");
	decide("[1]", &v, &o);
	CHECK(o.state == NV_STATE_FAILED && !o.record_found);
	decide("{\"state\":", &v, &o);
	CHECK(o.state == NV_STATE_FAILED && !o.record_found);

	/* the agent stopped it: its word, the record's exit code */
	nv_record_fail(&v.said, NV_STATE_FAILED, NV_PHASE_RUNNING, "raise it",
		       "the time limit of %d s was reached", 5);
	nv_record_fail(&v.said, NV_STATE_CANCELLED, NV_PHASE_ACCEPTED, NULL,
		       "ignored: the first failure wins");
	v.stopped = 1;
	v.said.have_exit = 1;
	v.said.exit_code = 143;
	decide("{\"state\":\"failed\",\"exit_code\":15,\"failure\":{\"phase\":"
	       "\"accepted\",\"reason\":\"r\",\"hint\":\"h\"}}",
	       &v, &o);
	CHECK(o.state == NV_STATE_FAILED && o.phase == NV_PHASE_RUNNING);
	CHECK_STR(o.reason, "the time limit of 5 s was reached");
	CHECK_STR(o.hint, "raise it");
	CHECK(o.have_exit && o.exit_code == 15);
	decide(NULL, &v, &o);
	CHECK(o.state == NV_STATE_FAILED && o.exit_code == 143);
	CHECK_STR(o.reason, "the time limit of 5 s was reached");
}

/* A remote backend's way (slurm.lua): stopped only for the states that
 * stop a job from outside; a cancel keeps the record's phase. */
static void test_decide_backend(void)
{
	nv_record_verdict v;
	nv_record_outcome o;
	const char *rec = "{\"state\":\"failed\",\"exit_code\":2,\"failure\":{"
			  "\"phase\":\"outputs_published\",\"reason\":\"r\","
			  "\"hint\":\"h\"}}";

	memset(&v, 0, sizeof(v));
	nv_record_outcome_init(&v.said);
	v.said.state = NV_STATE_FAILED;
	v.said.phase = NV_PHASE_RUNNING;
	snprintf(v.said.reason, sizeof(v.said.reason), "Slurm: FAILED");
	v.said.no_hint = 1;
	v.said.have_exit = 1;
	v.said.exit_code = 1;
	v.missing_reason = "the job ended but left no run record in storage";
	v.missing_hint = "read the node's output";

	/* not stopped: the record wins over Slurm's FAILED */
	decide(rec, &v, &o);
	CHECK(o.state == NV_STATE_FAILED &&
	      o.phase == NV_PHASE_OUTPUTS_PUBLISHED);
	CHECK_STR(o.reason, "r");
	CHECK(o.exit_code == 2);
	/* no record: Slurm's failure, its exit code, no hint */
	decide(NULL, &v, &o);
	CHECK(o.state == NV_STATE_FAILED && o.phase == NV_PHASE_RUNNING);
	CHECK_STR(o.reason, "Slurm: FAILED");
	CHECK(o.no_hint && o.have_exit && o.exit_code == 1);
	/* cancelled in Slurm: its word, the record's phase */
	v.stopped = 1;
	v.phase_from_record = 1;
	v.said.state = NV_STATE_CANCELLED;
	decide(rec, &v, &o);
	CHECK(o.state == NV_STATE_CANCELLED &&
	      o.phase == NV_PHASE_OUTPUTS_PUBLISHED);
	CHECK_STR(o.reason, "Slurm: FAILED");
	v.phase_from_record = 0;
	decide(rec, &v, &o);
	CHECK(o.phase == NV_PHASE_RUNNING);
	/* COMPLETED without a record: the missing record's failure */
	memset(&v.said, 0, sizeof(v.said));
	nv_record_outcome_init(&v.said);
	v.stopped = 0;
	decide(NULL, &v, &o);
	CHECK(o.state == NV_STATE_FAILED &&
	      o.phase == NV_PHASE_OUTPUTS_PUBLISHED);
	CHECK_STR(o.reason, "the job ended but left no run record in storage");
	CHECK_STR(o.hint, "read the node's output");
	/* stopped, yet Slurm says succeeded: its word */
	v.stopped = 1;
	decide(rec, &v, &o);
	CHECK(o.state == NV_STATE_SUCCEEDED && o.exit_code == 2);
}

int main(void)
{
	test_names();
	test_fill();
	test_decide_agent();
	test_decide_backend();
	return nv_test_done();
}
