module topology-labeler.local/volcano-oracle

go 1.26

require volcano.sh/volcano v1.15.0
