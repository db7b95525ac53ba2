#!/bin/sh
# check-concurrency.sh RESERVE STACK — run by make deploy-sam / deploy-tf
# before deploying. Lambda refuses a reserved concurrency that leaves
# fewer than 100 of the account's concurrent executions unreserved; the
# stacks reserve RESERVED_TOTAL with ReservedConcurrency=true
# (awsconfig.Functions; go test ./infra checks the figure). Fails, with
# what to do, when the account cannot take them; says what the quota
# is either way. Needs the AWS CLI and credentials.
set -eu
RESERVE=${1:-false}
STACK=${2:-xjob}
RESERVED_TOTAL=24
MIN_UNRESERVED=100
if ! command -v aws >/dev/null 2>&1; then
	echo "check-concurrency: the AWS CLI is not installed; skipping the concurrency quota check" >&2
	exit 0
fi
set -- $(aws lambda get-account-settings --query 'AccountLimit.[ConcurrentExecutions,UnreservedConcurrentExecutions]' --output text)
QUOTA=$1
UNRESERVED=$2
# On a redeploy the stack's own reservations are already taken from the
# unreserved pool: count them back.
OWN=0
for fn in scan ring dispatch callback registry web; do
	n=$(aws lambda get-function-concurrency --function-name "$STACK-$fn" --query ReservedConcurrentExecutions --output text 2>/dev/null || true)
	case "$n" in '' | None) ;; *) OWN=$((OWN + n)) ;; esac
done
FREE=$((UNRESERVED + OWN))
if [ "$RESERVE" = true ]; then
	NEED=$((RESERVED_TOTAL + MIN_UNRESERVED))
	if [ "$FREE" -lt "$NEED" ]; then
		echo "check-concurrency: ReservedConcurrency=true reserves $RESERVED_TOTAL concurrent executions and Lambda keeps $MIN_UNRESERVED unreserved," >&2
		echo "  so the account needs $NEED available; it has $FREE (quota $QUOTA). Deploy with RESERVED=false (the default)," >&2
		echo "  or ask for a higher 'Concurrent executions' quota (Service Quotas > AWS Lambda) first." >&2
		exit 1
	fi
	echo "check-concurrency: quota $QUOTA, $FREE available: reserving $RESERVED_TOTAL leaves $((FREE - RESERVED_TOTAL)) unreserved"
else
	echo "check-concurrency: quota $QUOTA, no reservations (RESERVED=false): the functions share the account's pool"
fi
