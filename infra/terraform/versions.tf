# xjob on AWS, the same resources as infra/sam/template.yaml. Deploy with
# `make build-lambda && make deploy-tf` (see docs/aws.md). infra/infra_test.go
# (plain `go test ./infra`) checks these files against internal/adapter/awsconfig and
# internal/adapter/dynamostore, so keep resource names and shapes as they are written here.

terraform {
  required_version = ">= 1.7" # removed blocks (dynamodb.tf)
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 6.29, < 7.0" # aws_lambda_permission invoked_via_function_url
    }
  }
}

provider "aws" {
  # null: the provider takes AWS_REGION / the profile's region.
  region = var.region
}

data "aws_region" "current" {}
