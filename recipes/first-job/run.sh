#!/bin/sh
# The command of recipes/first-job.lua. It runs in the job's workspace (the
# commit's tree), reads its input from $NAVETTE_INPUTS and writes its result
# into $NAVETTE_OUTPUTS.
set -eu

input="$NAVETTE_INPUTS/$GREETING_NAME"
if [ ! -r "$input" ]; then
	echo "first-job: FAILED: no input at $input" >&2
	exit 3
fi
if command -v sha256sum >/dev/null 2>&1; then
	sum=$(sha256sum "$input" | cut -d' ' -f1)
else
	sum=$(shasum -a 256 "$input" | cut -d' ' -f1)
fi

echo "first-job: job $NAVETTE_JOB_ID at commit $NAVETTE_COMMIT"
echo "first-job: input $GREETING_NAME has sha256 $sum"
cat "$input"

{
	echo "commit=$NAVETTE_COMMIT"
	echo "input_sha256=$sum"
	echo "job=$NAVETTE_JOB_ID"
} >"$NAVETTE_OUTPUTS/result.txt"
echo "first-job: wrote result.txt"
