# One role per function, granting exactly awsconfig.Functions[i].Actions on the resources the
# function uses (its own tables, awsconfig Tables), the SQS consume actions on the queues it is fed from, and logs on its own log
# group. infra_test.go compares every statement with internal/adapter/awsconfig.

data "aws_partition" "current" {}

data "aws_caller_identity" "current" {}

# One role per function (local.functions, functions.tf), with its own policy document below.
resource "aws_iam_role" "function" {
  for_each           = local.functions
  name_prefix        = "${var.name}-${each.key}-"
  assume_role_policy = data.aws_iam_policy_document.lambda_assume.json
}

resource "aws_iam_role_policy" "function" {
  for_each = local.functions
  name     = each.key
  role     = aws_iam_role.function[each.key].id
  policy   = each.value.policy
}

data "aws_iam_policy_document" "lambda_assume" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

data "aws_iam_policy_document" "scan" {
  statement {
    sid       = "Tables"
    actions   = ["dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobs.arn, aws_dynamodb_table.leases.arn]
  }
  statement {
    sid       = "Capacity" # the capacity keeper: the steady tables' billing mode (internal/scheduler/capacity)
    actions   = ["dynamodb:DescribeTable", "dynamodb:UpdateTable"]
    resources = [aws_dynamodb_table.jobs.arn, aws_dynamodb_table.log_pages.arn]
  }
  statement {
    sid       = "Indexes"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobs.arn}/index/*"]
  }
  statement {
    sid       = "Send"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.queue["ring"].arn]
  }
  statement {
    sid       = "Lanes" # the dispatch lanes: asynchronous invocations of the dispatch function (lambdaqueue)
    actions   = ["lambda:InvokeFunction"]
    resources = ["arn:${data.aws_partition.current.partition}:lambda:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:function:${var.name}-dispatch"] # its ARN from its name: a reference would make the dispatch policy depend on itself
  }
  statement {
    sid       = "Alarm" # the failure destination of its scheduled invocations
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.alarm.arn]
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.scan.arn}:*"]
  }
}

# The ring dispatches its buckets' fast lane itself: the dispatch function's table access;
# leases: FIRE_ONCE_NOW's misfire episodes.
data "aws_iam_policy_document" "ring" {
  statement {
    sid       = "Tables"
    actions   = ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobs.arn, aws_dynamodb_table.groups.arn, aws_dynamodb_table.log_pages.arn, aws_dynamodb_table.registry.arn, aws_dynamodb_table.reports.arn, aws_dynamodb_table.leases.arn]
  }
  statement {
    sid       = "Indexes"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobs.arn}/index/*", "${aws_dynamodb_table.log_pages.arn}/index/*"]
  }
  statement {
    sid       = "Send"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.queue["ring"].arn]
  }
  statement {
    sid       = "Lanes" # the dispatch lanes: asynchronous invocations of the dispatch function (lambdaqueue)
    actions   = ["lambda:InvokeFunction"]
    resources = ["arn:${data.aws_partition.current.partition}:lambda:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:function:${var.name}-dispatch"] # its ARN from its name: a reference would make the dispatch policy depend on itself
  }
  statement {
    sid       = "Consume"
    actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"]
    resources = [aws_sqs_queue.queue["ring"].arn]
  }
  statement {
    sid       = "Alarm"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.alarm.arn]
  }
  statement {
    # SecureString parameters under the AWS managed key aws/ssm need no KMS grant.
    sid     = "Secrets"
    actions = ["ssm:GetParameters"]
    resources = [
      "arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:parameter${var.access_token_parameter}",
      "arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:parameter${var.session_key_parameter}", # HTTP jobs' secret headers
    ]
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.ring.arn}:*"]
  }
}

data "aws_iam_policy_document" "dispatch" {
  statement {
    sid       = "Tables"
    actions   = ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobs.arn, aws_dynamodb_table.groups.arn, aws_dynamodb_table.log_pages.arn, aws_dynamodb_table.registry.arn, aws_dynamodb_table.reports.arn, aws_dynamodb_table.counters.arn]
  }
  statement {
    sid       = "Indexes"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobs.arn}/index/*", "${aws_dynamodb_table.log_pages.arn}/index/*"]
  }
  statement {
    sid       = "Send"
    actions   = ["sqs:SendMessage", "sqs:ChangeMessageVisibility"]
    resources = [aws_sqs_queue.queue["ring"].arn, aws_sqs_queue.queue["results"].arn]
  }
  statement {
    sid       = "Lanes" # the dispatch lanes: asynchronous invocations of the dispatch function (lambdaqueue)
    actions   = ["lambda:InvokeFunction"]
    resources = ["arn:${data.aws_partition.current.partition}:lambda:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:function:${var.name}-dispatch"] # its ARN from its name: a reference would make the dispatch policy depend on itself
  }
  statement {
    sid       = "Destination" # Lambda sends a lane event that failed every attempt with this role
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.dispatch_dlq.arn]
  }
  statement {
    sid       = "Consume"
    actions   = ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"]
    resources = [aws_sqs_queue.queue["results"].arn]
  }
  statement {
    sid       = "Alarm"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.alarm.arn]
  }
  statement {
    # SecureString parameters under the AWS managed key aws/ssm need no KMS grant.
    sid     = "Secrets"
    actions = ["ssm:GetParameters"]
    resources = [
      "arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:parameter${var.access_token_parameter}",
      "arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:parameter${var.session_key_parameter}", # HTTP jobs' secret headers
    ]
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.dispatch.arn}:*"]
  }
}

data "aws_iam_policy_document" "callback" {
  statement {
    sid       = "Tables"
    actions   = ["dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobs.arn, aws_dynamodb_table.groups.arn, aws_dynamodb_table.log_pages.arn, aws_dynamodb_table.registry.arn, aws_dynamodb_table.reports.arn, aws_dynamodb_table.counters.arn]
  }
  # The internet-facing function deletes, scans and batch-writes only where its code does.
  statement {
    sid       = "FailedLists"
    actions   = ["dynamodb:BatchWriteItem"]
    resources = [aws_dynamodb_table.log_pages.arn]
  }
  statement {
    sid       = "Deletes" # a one-time job after its run; a deregistration
    actions   = ["dynamodb:DeleteItem"]
    resources = [aws_dynamodb_table.jobs.arn, aws_dynamodb_table.registry.arn]
  }
  statement {
    sid       = "Scans" # a new app name's first heartbeat: app names and groups
    actions   = ["dynamodb:Scan"]
    resources = [aws_dynamodb_table.groups.arn, aws_dynamodb_table.registry.arn]
  }
  statement {
    sid       = "Indexes"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobs.arn}/index/*", "${aws_dynamodb_table.log_pages.arn}/index/*"]
  }
  statement {
    sid       = "Send"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.queue["ring"].arn, aws_sqs_queue.queue["results"].arn]
  }
  statement {
    sid       = "Lanes" # the dispatch lanes: asynchronous invocations of the dispatch function (lambdaqueue)
    actions   = ["lambda:InvokeFunction"]
    resources = ["arn:${data.aws_partition.current.partition}:lambda:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:function:${var.name}-dispatch"] # its ARN from its name: a reference would make the dispatch policy depend on itself
  }
  statement {
    sid       = "Alarm"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.alarm.arn]
  }
  statement {
    # SecureString parameters under the AWS managed key aws/ssm need no KMS grant.
    sid       = "Secrets"
    actions   = ["ssm:GetParameters"]
    resources = ["arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:parameter${var.access_token_parameter}"]
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.callback.arn}:*"]
  }
}

data "aws_iam_policy_document" "registry" {
  # Console and leases: the maintenance resumes a change set an apply left half-written.
  statement {
    sid       = "Tables"
    actions   = ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobs.arn, aws_dynamodb_table.groups.arn, aws_dynamodb_table.log_pages.arn, aws_dynamodb_table.registry.arn, aws_dynamodb_table.reports.arn, aws_dynamodb_table.counters.arn, aws_dynamodb_table.console.arn, aws_dynamodb_table.leases.arn]
  }
  statement {
    sid       = "Indexes"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobs.arn}/index/*", "${aws_dynamodb_table.log_pages.arn}/index/*"]
  }
  statement {
    sid       = "Send"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.queue["ring"].arn]
  }
  statement {
    sid       = "Lanes" # the dispatch lanes: asynchronous invocations of the dispatch function (lambdaqueue)
    actions   = ["lambda:InvokeFunction"]
    resources = ["arn:${data.aws_partition.current.partition}:lambda:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:function:${var.name}-dispatch"] # its ARN from its name: a reference would make the dispatch policy depend on itself
  }
  statement {
    sid       = "Alarm"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.alarm.arn]
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.registry.arn}:*"]
  }
}

data "aws_iam_policy_document" "web" {
  statement {
    sid       = "Tables"
    actions   = ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:Scan", "dynamodb:UpdateItem"]
    resources = [aws_dynamodb_table.jobs.arn, aws_dynamodb_table.groups.arn, aws_dynamodb_table.log_pages.arn, aws_dynamodb_table.registry.arn, aws_dynamodb_table.leases.arn, aws_dynamodb_table.reports.arn, aws_dynamodb_table.counters.arn, aws_dynamodb_table.console.arn]
  }
  statement {
    sid       = "Indexes"
    actions   = ["dynamodb:Query"]
    resources = ["${aws_dynamodb_table.jobs.arn}/index/*", "${aws_dynamodb_table.log_pages.arn}/index/*"]
  }
  statement {
    sid       = "Send"
    actions   = ["sqs:SendMessage"]
    resources = [aws_sqs_queue.queue["ring"].arn]
  }
  statement {
    sid       = "Lanes" # the dispatch lanes: asynchronous invocations of the dispatch function (lambdaqueue)
    actions   = ["lambda:InvokeFunction"]
    resources = ["arn:${data.aws_partition.current.partition}:lambda:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:function:${var.name}-dispatch"] # its ARN from its name: a reference would make the dispatch policy depend on itself
  }
  statement {
    sid       = "Alarm"
    actions   = ["sns:Publish"]
    resources = [aws_sns_topic.alarm.arn]
  }
  statement {
    # SecureString parameters under the AWS managed key aws/ssm need no KMS grant.
    sid       = "Secrets"
    actions   = ["ssm:GetParameters"]
    resources = ["arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:parameter${var.access_token_parameter}", "arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:parameter${var.admin_token_parameter}", "arn:${data.aws_partition.current.partition}:ssm:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:parameter${var.session_key_parameter}"]
  }
  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.web.arn}:*"]
  }
}

# In a VPC, Lambda creates and removes the network interfaces of the functions that call executors with
# their own roles (AWSLambdaVPCAccessExecutionRole's EC2 actions, without its logs:*): granted to those
# three only, and only when vpc_subnet_ids is set.
data "aws_iam_policy_document" "vpc_access" {
  statement {
    sid       = "DescribeNetwork" # no resource-level permissions: resources must be *
    actions   = ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]
    resources = ["*"]
  }
  statement {
    sid       = "NetworkInterfaces" # this account's and region's network interfaces, subnets, security groups
    actions   = ["ec2:CreateNetworkInterface", "ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"]
    resources = ["arn:${data.aws_partition.current.partition}:ec2:${data.aws_region.current.name}:${data.aws_caller_identity.current.account_id}:*"]
  }
}

resource "aws_iam_role_policy" "ring_vpc" {
  count  = local.in_vpc ? 1 : 0
  name   = "vpc-access"
  role   = aws_iam_role.function["ring"].id
  policy = data.aws_iam_policy_document.vpc_access.json
}

resource "aws_iam_role_policy" "dispatch_vpc" {
  count  = local.in_vpc ? 1 : 0
  name   = "vpc-access"
  role   = aws_iam_role.function["dispatch"].id
  policy = data.aws_iam_policy_document.vpc_access.json
}

resource "aws_iam_role_policy" "web_vpc" {
  count  = local.in_vpc ? 1 : 0
  name   = "vpc-access"
  role   = aws_iam_role.function["web"].id
  policy = data.aws_iam_policy_document.vpc_access.json
}

# AWS jobs: the targets' actions on exactly the ARNs of aws_target_arns (an action on another service's ARN
# grants nothing), to the functions that make their calls; no policy at all when the list is empty.
locals {
  has_aws_targets = var.aws_target_arns != ""
  aws_target_arns = compact(split(",", var.aws_target_arns))
}

data "aws_iam_policy_document" "aws_targets" {
  statement {
    sid       = "Targets"
    actions   = ["events:PutEvents", "lambda:InvokeFunction", "sns:Publish", "sqs:GetQueueUrl", "sqs:SendMessage", "states:StartExecution"]
    resources = local.aws_target_arns
  }
}

resource "aws_iam_role_policy" "ring_targets" {
  count  = local.has_aws_targets ? 1 : 0
  name   = "aws-targets"
  role   = aws_iam_role.function["ring"].id
  policy = data.aws_iam_policy_document.aws_targets.json
}

resource "aws_iam_role_policy" "dispatch_targets" {
  count  = local.has_aws_targets ? 1 : 0
  name   = "aws-targets"
  role   = aws_iam_role.function["dispatch"].id
  policy = data.aws_iam_policy_document.aws_targets.json
}

resource "aws_iam_role_policy" "web_targets" {
  count  = local.has_aws_targets ? 1 : 0
  name   = "aws-targets"
  role   = aws_iam_role.function["web"].id
  policy = data.aws_iam_policy_document.aws_targets.json
}
