package lambdaapp_test

import "github.com/aws/aws-sdk-go-v2/service/sqs"

func sqsEntries(p any) int {
	switch in := p.(type) {
	case *sqs.SendMessageBatchInput:
		return len(in.Entries)
	case *sqs.DeleteMessageBatchInput:
		return len(in.Entries)
	}
	return 0
}
